package bench_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rtbd/rtbd/bench"
)

// Example shows the calls the bench mode makes: a target, an open-loop run
// watching the bidder process and its connections, a report in three
// formats, and a comparison with an earlier report.
func Example() {
	ctx := context.Background()
	bids := bench.NewHTTPTarget("bids", "127.0.0.1:8080", "/openrtb2/bid", func(w *bench.Worker, dst []byte) []byte {
		return fmt.Appendf(dst, `{"id":"%d-%d","imp":[{"id":"1"}],"tmax":100}`, w.ID, w.Seq)
	})
	res, err := bench.Run(ctx, bids, bench.Options{
		Rate: 3000, Duration: time.Minute, Warmup: 10 * time.Second, Tmax: 100 * time.Millisecond,
		Watch: bench.Watch{Processes: []bench.WatchProcess{{Name: "rtbd", PID: 12345}}},
	})
	if err != nil {
		return
	}
	rep := bench.NewReport(bench.Meta{Title: "local catalog", GitRev: "abc123", Config: map[string]string{"rate": "3000"}}, res)
	_ = bench.WriteText(os.Stdout, rep)
	f, _ := os.Create("local.json")
	_ = bench.WriteJSON(f, rep)
	f.Close()

	old, err := bench.LoadReport("previous.json")
	if err == nil {
		_ = bench.WriteCompare(os.Stdout, old, rep, bench.Compare(old, rep))
	}
}
