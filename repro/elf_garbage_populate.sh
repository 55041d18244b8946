#!/bin/sh
# Builds and runs elf_garbage_populate.c against the tree's objects.
cd "$(dirname "$0")/.." || exit 2
make -s build/obj/src/symbols/elffile.o >/dev/null || exit 2
objs=$(make -s -p -n 2>/dev/null | sed -n 's/^TOOL_OBJ := //p' | head -1)
[ -n "$objs" ] || objs=$(ls build/obj/src/common/*.o build/obj/src/format/*.o build/obj/src/ops/*.o build/obj/src/symbols/*.o 2>/dev/null)
cc -std=c11 -D_GNU_SOURCE -O1 -g -Isrc/symbols -Isrc/common -Isrc -Iinclude \
	-o build/repro_elf_garbage_populate repro/elf_garbage_populate.c \
	$(echo $objs) -lz -lm -ldl -lpthread || exit 2
exec build/repro_elf_garbage_populate "$@"
