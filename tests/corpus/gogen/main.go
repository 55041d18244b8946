// gogen: writes Go runtime profiles for the generated test corpus
// (tests/corpus/gen.sh), in the layout of ../shared/corpus (tests/README.md):
//
//	gogen basic DIR   go/go_heap_basic.{pb.gz,txt} (one heap state, debug=0
//	                  and debug=1), go/go_allocs_basic.pb.gz
//	gogen rate1 DIR   go/go_heap_rate1.{pb.gz,txt} (MemProfileRate=1)
//	gogen delta DIR   go/go_heap_delta_{1,2}.{pb.gz,txt}: one process,
//	                  period 4096, two states
//	gogen labels DIR  go/go_cpu_labels.pb.gz, go/go_goroutine_labels.pb.gz
//	                  (string labels through pprof.Do)
//	gogen fast DIR    fastdelta/*.pprof: uncompressed heap profiles (a
//	                  single one, before/after pairs, a large one with
//	                  thousands of stacks) and a block profile pair
//
// Only the standard library: it builds offline (GO111MODULE=off).
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

var keep [][]byte

//go:noinline
func allocSmall(n, size int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, size))
	}
}

//go:noinline
func allocLarge(n, size int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, size))
	}
}

//go:noinline
func allocTemp(n, size int) int {
	s := 0
	for i := 0; i < n; i++ {
		b := make([]byte, size)
		s += len(b)
	}
	return s
}

// tree allocates at the leaves of a call tree of the given depth and fan-out
// (each path is another stack): many distinct samples.
//
//go:noinline
func tree(depth, fan, size int) {
	if depth == 0 {
		chain(12, size)
		return
	}
	for i := 0; i < fan; i++ {
		switch i % 4 {
		case 0:
			branch0(depth-1, fan, size+i*16)
		case 1:
			branch1(depth-1, fan, size+i*16)
		case 2:
			branch2(depth-1, fan, size+i*16)
		default:
			branch3(depth-1, fan, size+i*16)
		}
	}
}

// chain allocates n calls deeper: long stacks, as real programs have.
//
//go:noinline
func chain(n, size int) {
	if n == 0 {
		keep = append(keep, make([]byte, size))
		return
	}
	chain(n-1, size)
}

//go:noinline
func branch0(d, f, s int) { tree(d, f, s) }

//go:noinline
func branch1(d, f, s int) { tree(d, f, s) }

//go:noinline
func branch2(d, f, s int) { tree(d, f, s) }

//go:noinline
func branch3(d, f, s int) { tree(d, f, s) }

func write(dir, rel string, p *pprof.Profile, debug int) {
	var b bytes.Buffer
	if err := p.WriteTo(&b, debug); err != nil {
		die(err)
	}
	save(dir, rel, b.Bytes())
}

func save(dir, rel string, data []byte) {
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		die(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		die(err)
	}
}

// heapRaw returns the heap profile as uncompressed profile.proto.
func heapRaw(name string) []byte {
	var b bytes.Buffer
	if err := pprof.Lookup(name).WriteTo(&b, 0); err != nil {
		die(err)
	}
	z, err := gzip.NewReader(&b)
	if err != nil {
		die(err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		die(err)
	}
	return raw
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "gogen:", err)
	os.Exit(1)
}

// settle runs two collections: a heap profile shows the state as of the
// last completed cycle.
func settle() {
	runtime.GC()
	runtime.GC()
}

// heapState writes the current heap state as debug=0 and debug=1: the
// profile is the state at the last GC, and nothing runs a GC between.
func heapState(dir, base string) {
	settle()
	h := pprof.Lookup("heap")
	write(dir, base+".pb.gz", h, 0)
	write(dir, base+".txt", h, 1)
}

//go:noinline
func spin(ctx context.Context, d time.Duration) {
	x := 0
	for t := time.Now(); time.Since(t) < d; {
		for i := 0; i < 100000; i++ {
			x += i * i
		}
	}
	if x == 42 {
		fmt.Println(x)
	}
}

//go:noinline
func lockContend(mu *sync.Mutex, ch chan int, n int) {
	for i := 0; i < n; i++ {
		ch <- i
	}
}

func blockWork(n int) {
	ch := make(chan int)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range ch {
			time.Sleep(100 * time.Microsecond)
		}
	}()
	lockContend(nil, ch, n)
	close(ch)
	wg.Wait()
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gogen basic|rate1|delta|labels|fast DIR")
		os.Exit(2)
	}
	dir := os.Args[2]
	switch os.Args[1] {
	case "basic":
		runtime.MemProfileRate = 512 * 1024
		allocSmall(20000, 64)
		allocLarge(16, 1<<20)
		allocTemp(4000, 4096)
		heapState(dir, "go/go_heap_basic")
		write(dir, "go/go_allocs_basic.pb.gz", pprof.Lookup("allocs"), 0)
	case "rate1":
		runtime.MemProfileRate = 1
		allocSmall(300, 48)
		allocLarge(4, 100000)
		allocTemp(200, 1000)
		heapState(dir, "go/go_heap_rate1")
	case "delta":
		runtime.MemProfileRate = 4096
		allocSmall(2000, 100)
		allocTemp(500, 2000)
		heapState(dir, "go/go_heap_delta_1")
		allocLarge(8, 300000)
		tree(3, 4, 200)
		allocTemp(500, 5000)
		keep = keep[len(keep)/3:] // some of the first blocks are freed
		heapState(dir, "go/go_heap_delta_2")
	case "labels":
		f, err := os.Create(filepath.Join(dir, "go/go_cpu_labels.pb.gz"))
		if err != nil {
			die(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			die(err)
		}
		var wg sync.WaitGroup
		for _, who := range []string{"alpha", "beta"} {
			wg.Add(1)
			go func(who string) {
				defer wg.Done()
				pprof.Do(context.Background(), pprof.Labels("worker", who), func(ctx context.Context) {
					spin(ctx, 300*time.Millisecond)
				})
			}(who)
		}
		wg.Wait()
		pprof.StopCPUProfile()
		f.Close()
		// goroutines parked under labels
		stop := make(chan struct{})
		ready := make(chan struct{})
		for _, who := range []string{"reader", "writer", "reader"} {
			go func(who string) {
				pprof.Do(context.Background(), pprof.Labels("role", who), func(context.Context) {
					ready <- struct{}{}
					<-stop
				})
			}(who)
		}
		for i := 0; i < 3; i++ {
			<-ready
		}
		write(dir, "go/go_goroutine_labels.pb.gz", pprof.Lookup("goroutine"), 0)
		close(stop)
	case "fast":
		runtime.MemProfileRate = 4096
		runtime.SetBlockProfileRate(1)
		allocSmall(3000, 80)
		tree(2, 4, 100)
		settle()
		save(dir, "fastdelta/heap.pprof", heapRaw("heap"))
		save(dir, "fastdelta/heap.before.pprof", heapRaw("heap"))
		allocLarge(6, 200000)
		tree(3, 4, 300)
		settle()
		save(dir, "fastdelta/heap.after.pprof", heapRaw("heap"))
		blockWork(50)
		save(dir, "fastdelta/block.before.pprof", heapRaw("block"))
		blockWork(80)
		save(dir, "fastdelta/block.after.pprof", heapRaw("block"))
		// large: 4^6 leaf stacks, two states (the stress pairs)
		runtime.MemProfileRate = 512
		tree(6, 4, 64)
		settle()
		save(dir, "fastdelta/big-heap.pprof", heapRaw("heap"))
		save(dir, "fastdelta/stress-failure.before.pprof", heapRaw("heap"))
		tree(5, 4, 96)
		settle()
		save(dir, "fastdelta/stress-failure.after.pprof", heapRaw("heap"))
		save(dir, "fastdelta/stress-failure.2.before.pprof", heapRaw("heap"))
		keep = keep[len(keep)/2:]
		tree(4, 4, 128)
		settle()
		save(dir, "fastdelta/stress-failure.2.after.pprof", heapRaw("heap"))
		save(dir, "fastdelta/stress-failure.3.before.pprof", heapRaw("heap"))
		tree(6, 4, 48)
		settle()
		save(dir, "fastdelta/stress-failure.3.after.pprof", heapRaw("heap"))
	default:
		fmt.Fprintln(os.Stderr, "gogen: unknown mode", os.Args[1])
		os.Exit(2)
	}
}
