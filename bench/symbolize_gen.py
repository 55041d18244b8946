#!/usr/bin/env python3
"""symbolize_gen.py: writes a large generated C++ program for the
symbolization benchmark (BENCHMARKS.md "## Symbolization").

usage: symbolize_gen.py DIR [UNITS] [FUNCS]

DIR/u<K>.cc for K < UNITS, each with FUNCS functions that allocate through
the standard library (vector, map, unordered_map, string, shared_ptr) with
types of their own, so every unit instantiates and inlines its own copy of
the containers (a lot of DWARF, deep inline chains), and call other units'
functions through a table, so stacks cross units. DIR/main.cc builds the
table and walks it. Deterministic output.
"""
import os
import sys

HEAD = """#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>
typedef void (*fn_t)(int, unsigned);
extern fn_t table[];
extern unsigned table_size;
extern std::vector<std::shared_ptr<void>> keep;
"""

BODY = """
namespace u{k} {{
struct T{j} {{ long a[{w}]; std::string s; T{j}(unsigned x) : s(std::to_string(x)) {{ a[0] = x; }} }};
template <class V> struct Box{j} {{
\tstd::vector<V> v;
\tstd::map<unsigned, std::string> m;
\tstd::unordered_map<unsigned, V> h;
\t__attribute__((noinline)) void add(unsigned x) {{
\t\tv.push_back(V(x));
\t\tm[x] = std::string({n}, 'a' + (char)(x % 26));
\t\th.emplace(x, V(x + 1));
\t}}
}};
}}
void f_{k}_{j}(int depth, unsigned seed)
{{
\tauto b = std::make_shared<u{k}::Box{j}<u{k}::T{j}>>();
\tfor (unsigned i = 0; i < {reps}; i++)
\t\tb->add(seed + i);
\tkeep.push_back(b);
\tif (depth > 0)
\t\ttable[(seed * 2654435761u + {j}) % table_size](depth - 1, seed * 31 + {k});
}}
"""


def main():
    out = sys.argv[1]
    units = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    funcs = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    os.makedirs(out, exist_ok=True)
    for k in range(units):
        parts = [HEAD]
        for j in range(funcs):
            parts.append(BODY.format(k=k, j=j, w=1 + (k * 7 + j) % 9,
                                     n=8 + (j * 5) % 40, reps=1 + j % 3))
        with open(os.path.join(out, "u%d.cc" % k), "w") as f:
            f.write("".join(parts))
    names = ["f_%d_%d" % (k, j) for k in range(units) for j in range(funcs)]
    with open(os.path.join(out, "main.cc"), "w") as f:
        f.write(HEAD)
        for n in names:
            f.write("void %s(int, unsigned);\n" % n)
        f.write("fn_t table[] = {\n")
        for n in names:
            f.write("\t%s,\n" % n)
        f.write("};\nunsigned table_size = %d;\n" % len(names))
        f.write("std::vector<std::shared_ptr<void>> keep;\n")
        f.write("int main()\n{\n"
                "\tfor (unsigned i = 0; i < table_size; i++)\n"
                "\t\ttable[i](3, i);\n"
                "\treturn keep.empty();\n}\n")


if __name__ == "__main__":
    main()
