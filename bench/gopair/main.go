// gopair: writes a real Go heap profile pair (runtime/pprof, gzip'd as Go
// writes it) with many distinct stacks, for bench/run_delta.sh.
//   go run . BEFORE.pb.gz AFTER.pb.gz
// 4^8 call paths through dispatch (each a distinct stack), each allocating
// three sizes; between the two profiles one path in three allocates again.
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

var keep [][]byte

func dispatch(d, p int, round int) {
	if d == 0 {
		leaf(p, round)
		return
	}
	switch p % 4 {
	case 0:
		f0(d-1, p/4, round)
	case 1:
		f1(d-1, p/4, round)
	case 2:
		f2(d-1, p/4, round)
	default:
		f3(d-1, p/4, round)
	}
}

//go:noinline
func f0(d, p, r int) { dispatch(d, p, r) }

//go:noinline
func f1(d, p, r int) { dispatch(d, p, r) }

//go:noinline
func f2(d, p, r int) { dispatch(d, p, r) }

//go:noinline
func f3(d, p, r int) { dispatch(d, p, r) }

var path int

//go:noinline
func leaf(p, round int) {
	if round == 1 && path%3 != 0 {
		return
	}
	keep = append(keep, make([]byte, 16), make([]byte, 48), make([]byte, 256))
}

func write(name string) {
	runtime.GC()
	f, err := os.Create(name)
	if err != nil {
		panic(err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		panic(err)
	}
	f.Close()
}

func main() {
	runtime.MemProfileRate = 1
	const depth = 8
	for round := 0; round < 2; round++ {
		for path = 0; path < 1<<(2*depth); path++ {
			dispatch(depth, path, round)
		}
		write(os.Args[1+round])
	}
}
