// weft-bench `server` section, Go peer: a TCP echo server on 127.0.0.1.
//
//	echoserver GOMAXPROCS
//
// Listens on an ephemeral port, prints it on stdout (one line), then runs one
// goroutine per connection that echoes every byte back until EOF. Exits when
// stdin reaches EOF (the benchmark closes it to stop the server), so a
// forgotten server cannot outlive its parent. Built by weft-bench at bench
// time (GO111MODULE=off go build), like syncbench.go.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
)

func serve(c net.Conn) {
	defer c.Close()
	var buf [64]byte
	for {
		n, err := c.Read(buf[:])
		if n > 0 {
			// net.Conn.Write writes everything or returns an error.
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func main() {
	procs := 2
	if len(os.Args) > 1 {
		if n, err := strconv.Atoi(os.Args[1]); err == nil && n > 0 {
			procs = n
		}
	}
	runtime.GOMAXPROCS(procs)
	// Go takes the listen backlog from /proc/sys/net/core/somaxconn.
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "echoserver:", err)
		os.Exit(1)
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port) // os.Stdout is unbuffered
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			continue // e.g. EMFILE: keep serving the others
		}
		// Go sets TCP_NODELAY on accepted connections by default.
		go serve(c)
	}
}
