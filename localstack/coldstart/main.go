// Command coldstart measures what a function's cold start costs, for two
// builds of it (before and after a change): the size of its bootstrap as
// deployed (linux/arm64, stripped) and the time from starting the process
// to its first request for an invocation from the Lambda runtime API
// (here a local stand-in), which is the init phase Lambda bills and a
// caller waits for. Rounds alternate the two builds, so a busy machine
// slows both alike; the medians and their ratio are printed.
//
//	go run ./localstack/coldstart -before DIR -after DIR [-rounds 30] fn...
//
// DIR holds the two builds of each function fn: DIR/fn (host, for the
// timing) and DIR/fn.arm64 (for the size). localstack/coldstart.sh builds
// them from two commits.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

func main() {
	before := flag.String("before", "", "directory of the builds before")
	after := flag.String("after", "", "directory of the builds after")
	rounds := flag.Int("rounds", 30, "starts of each build")
	flag.Parse()
	if *before == "" || *after == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: coldstart -before DIR -after DIR [-rounds N] function...")
		os.Exit(2)
	}
	fmt.Println("| function | bootstrap before | after | size ratio | init before (median ms) | after | init ratio |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, fn := range flag.Args() {
		if err := measure(fn, *before, *after, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "coldstart:", fn+":", err)
			os.Exit(1)
		}
	}
}

func measure(fn, before, after string, rounds int) error {
	var sizes [2]int64
	var starts [2][]time.Duration
	dirs := [2]string{before, after}
	for i, d := range dirs {
		st, err := os.Stat(filepath.Join(d, fn+".arm64"))
		if err != nil {
			return err
		}
		sizes[i] = st.Size()
	}
	for r := range rounds {
		for k := range 2 {
			i := (r + k) % 2
			d, err := initTime(filepath.Join(dirs[i], fn))
			if err != nil {
				return err
			}
			starts[i] = append(starts[i], d)
		}
	}
	m := [2]float64{median(starts[0]), median(starts[1])}
	fmt.Printf("| %s | %.1f MB | %.1f MB | %.3f | %.1f | %.1f | %.3f |\n", fn, float64(sizes[0])/1e6, float64(sizes[1])/1e6,
		float64(sizes[1])/float64(sizes[0]), m[0], m[1], m[1]/m[0])
	return nil
}

// initTime starts bin against a stand-in of the runtime API and returns
// how long it took to ask for its first invocation; then it stops it.
func initTime(bin string) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	asked := make(chan time.Time, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- time.Now():
		default:
		}
		<-r.Context().Done() // no invocation comes
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	cmd := exec.Command(bin)
	// A configuration every function accepts: the required variables of
	// all of them (the names are never reached), credentials that are
	// never used, and the runtime API.
	cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=" + ln.Addr().String(), "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=x", "STAGE=dev", "TABLE_NAME=t", "EVENT_BUS_NAME=b",
		"STATE_MACHINE_ARNS=delegation=arn:aws:states:us-east-1:1:stateMachine:d", "QUEUE_URLS=q=http://127.0.0.1:1/q",
		"FUNCTION_NAMES=expert-gate=g", "FEATURE_FLAGS=collaboration=true", "MODEL_PROVIDER=local",
		"TRACE_ENDPOINT=http://127.0.0.1:1/v1/traces", "TRACE_SAMPLE_PERCENT=100", "ROUTING_EMBEDDER=none"}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	select {
	case t := <-asked:
		return t.Sub(start), nil
	case <-time.After(10 * time.Second):
		return 0, errors.New(bin + " did not reach the runtime API in 10 s")
	}
}

func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}
