// The Go peer of weft-bench's sync section (built at bench time with
// `go build` when go is on PATH). One measurement per process; prints
// key=value lines: seconds, ok, and vm_hwm_kib (peak RSS, from
// /proc/self/status) — the same lines as weft-bench's own children.
//
//	syncbench parfib N            parfib through channels (Concurrent Cilk Figure 8)
//	syncbench blocked N           N goroutines blocked on one channel, then released
//	syncbench chan P C CAP MSGS   P senders, C receivers, MSGS messages, capacity CAP
//
// GOMAXPROCS comes from the environment (weft-bench sets it to the worker count).
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

func vmHWM() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "-1"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "VmHWM:") {
			return strings.Fields(s.Text())[1]
		}
	}
	return "-1"
}

func parfib(n int) int64 {
	if n < 2 {
		return int64(n)
	}
	ch := make(chan int64, 1)
	go func() { ch <- parfib(n - 1) }()
	b := parfib(n - 2)
	return <-ch + b
}

func serialFib(n int) int64 {
	if n < 2 {
		return int64(n)
	}
	return serialFib(n-1) + serialFib(n-2)
}

func main() {
	arg := func(i int) int {
		v, err := strconv.Atoi(os.Args[i])
		if err != nil {
			panic(err)
		}
		return v
	}
	ok := true
	switch os.Args[1] {
	case "parfib":
		n := arg(2)
		t0 := time.Now()
		r := parfib(n)
		fmt.Printf("seconds=%.6f\n", time.Since(t0).Seconds())
		ok = r == serialFib(n)
	case "blocked":
		n := arg(2)
		gate := make(chan struct{})
		var started, done sync.WaitGroup
		started.Add(n)
		done.Add(n)
		t0 := time.Now()
		for i := 0; i < n; i++ {
			go func() {
				started.Done()
				<-gate
				done.Done()
			}()
		}
		started.Wait()
		runtime.Gosched()
		t1 := time.Now()
		fmt.Printf("block_seconds=%.6f\n", t1.Sub(t0).Seconds())
		fmt.Printf("vm_hwm_blocked_kib=%s\n", vmHWM())
		close(gate)
		done.Wait()
		fmt.Printf("release_seconds=%.6f\n", time.Since(t1).Seconds())
	case "chan":
		p, c, capacity, msgs := arg(2), arg(3), arg(4), arg(5)
		ch := make(chan int64, capacity)
		var wg sync.WaitGroup
		sums := make([]int64, c)
		counts := make([]int64, c)
		t0 := time.Now()
		for i := 0; i < c; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				for v := range ch {
					sums[i] += v
					counts[i]++
				}
			}(i)
		}
		var pw sync.WaitGroup
		for i := 0; i < p; i++ {
			pw.Add(1)
			go func(i int) {
				defer pw.Done()
				for k := i; k < msgs; k += p {
					ch <- int64(k)
				}
			}(i)
		}
		pw.Wait()
		close(ch)
		wg.Wait()
		fmt.Printf("seconds=%.6f\n", time.Since(t0).Seconds())
		var sum, count int64
		for i := 0; i < c; i++ {
			sum += sums[i]
			count += counts[i]
		}
		ok = count == int64(msgs) && sum == int64(msgs)*int64(msgs-1)/2
	default:
		fmt.Fprintln(os.Stderr, "syncbench: unknown mode", os.Args[1])
		os.Exit(2)
	}
	if ok {
		fmt.Println("ok=1")
	} else {
		fmt.Println("ok=0")
	}
	fmt.Printf("vm_hwm_kib=%s\n", vmHWM())
	if !ok {
		os.Exit(1)
	}
}
