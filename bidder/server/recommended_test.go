package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/recommended"
)

// view records a product view for uid through the bid listener's /event
// pixel, as a browser with rtbd's uid cookie does.
func view(t *testing.T, s *Server, uid string, group, pid int64) {
	t.Helper()
	req, err := http.NewRequest("GET", fmt.Sprintf("http://%s/event?pg=%d&pid=%d&ev=view", s.Addr(), group, pid), nil)
	if err != nil {
		t.Error(err)
		return
	}
	req.AddCookie(&http.Cookie{Name: "rtbd_uid", Value: uid})
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Errorf("/event %s: %v", uid, err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/event %s: %d", uid, resp.StatusCode)
	}
}

// postRecommended posts body to the admin route with Content-Type ct ("":
// none) and decodes the JSON answer.
func postRecommended(t *testing.T, s *Server, ct, body string) (int, recommended.Answer) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+s.AdminAddr()+"/admin/users/recommended", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a recommended.Answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("answer %d: %v", resp.StatusCode, err)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("answer Content-Type %q", got)
	}
	return resp.StatusCode, a
}

func profile(t *testing.T, s *Server, uid string) user.Profile {
	t.Helper()
	var p user.Profile
	if found, err := s.Users().Get(context.Background(), uid, &p); err != nil || !found {
		t.Fatalf("%s: found %v, %v", uid, found, err)
	}
	return p
}

// TestAdminUsersRecommended: with the embedded user store (held by the
// running bidder), POST /admin/users/recommended writes the good lines
// into the bidder's own store, keeping the viewed products, and lists the
// rejected ones; `rtbd users recommend -bidder` does the same from a file.
func TestAdminUsersRecommended(t *testing.T) {
	cfg := testConfig(t)
	cfg.User.MaxGroups = 2
	s := startWithBulkUser(t, cfg)
	view(t, s, "reco-1", 1, 1)

	body := `{"uid": "reco-1", "recommended": [{"group": 1, "ids": [5, 6]}]}
{"uid": "reco-2", "recommended": [{"group": 2, "ids": [7]}]}
{"uid": "reco-3", "recommended": [
{"uid": "reco-4", "recommended": [{"group": 0, "ids": [1]}]}
{"uid": "reco-5", "recommended": [{"group": 1, "ids": [1]}, {"group": 2, "ids": [2]}, {"group": 3, "ids": [3]}]}
`
	st, a := postRecommended(t, s, "application/x-ndjson; charset=utf-8", body)
	if st != 200 || a.Lines != 5 || a.Set != 2 || a.Cleared != 0 || a.Rejected != 3 || a.Failed != 0 || a.Error != "" {
		t.Fatalf("answer %d %+v: want 200, 5 lines, 2 set, 3 rejected", st, a)
	}
	// Line 5 breaks the bidder's user.max_groups.
	if len(a.Rejects) != 3 || !strings.HasPrefix(a.Rejects[0], "line 3: ") ||
		!strings.HasPrefix(a.Rejects[1], "line 4: ") || !strings.Contains(a.Rejects[1], "group id 0") ||
		!strings.HasPrefix(a.Rejects[2], "line 5: ") || !strings.Contains(a.Rejects[2], "3 groups, more than 2") {
		t.Errorf("rejects %q: want lines 3, 4 and 5 with their reasons", a.Rejects)
	}
	for series, want := range map[string]float64{
		`rtbd_users_recommended_loads_total{result="ok"}`:       1,
		`rtbd_users_recommended_lines_total{result="written"}`:  2,
		`rtbd_users_recommended_lines_total{result="rejected"}`: 3,
		`rtbd_users_recommended_lines_total{result="failed"}`:   0,
	} {
		if got := scrape(t, s.AdminAddr(), series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if want := filepath.Join(cfg.Bidder.DataDir, "users"); a.Store != want {
		t.Errorf("store %q, want %q", a.Store, want)
	}
	p := profile(t, s, "reco-1")
	if !reflect.DeepEqual(p.Recommended, []user.GroupIDs{{Group: 1, IDs: []int64{5, 6}}}) ||
		!reflect.DeepEqual(p.Viewed, []user.GroupIDs{{Group: 1, IDs: []int64{1}}}) {
		t.Errorf("reco-1: viewed %+v recommended %+v: want the view kept and [5 6] recommended", p.Viewed, p.Recommended)
	}
	if p := profile(t, s, "reco-2"); !reflect.DeepEqual(p.RecommendedIn(2), []int64{7}) {
		t.Errorf("reco-2: %+v", p)
	}
	if found, err := s.Users().Get(context.Background(), "reco-4", &p); err != nil || found {
		t.Errorf("reco-4, a rejected line: found %v, %v; want no profile", found, err)
	}

	// Not JSON Lines: 415, nothing read.
	if st, a := postRecommended(t, s, "text/csv", body); st != http.StatusUnsupportedMediaType || a.Error == "" || a.Lines != 0 {
		t.Errorf("text/csv: %d %+v, want 415 with an error", st, a)
	}
	// No Content-Type: taken as JSON Lines; an empty list clears.
	if st, a := postRecommended(t, s, "", `{"uid": "reco-2", "recommended": []}`); st != 200 || a.Set != 1 || a.Cleared != 1 {
		t.Errorf("clearing reco-2: %d %+v", st, a)
	}
	if p := profile(t, s, "reco-2"); len(p.Recommended) != 0 {
		t.Errorf("reco-2 after clearing: %+v", p.Recommended)
	}

	// The command line through the same bidder.
	in := filepath.Join(t.TempDir(), "reco.jsonl")
	if err := os.WriteFile(in, []byte(`{"uid": "reco-1", "recommended": [{"group": 3, "ids": [9]}]}`+"\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := recommended.Main(context.Background(), []string{"-in", in, "-bidder", "http://" + s.AdminAddr()}, &out, &errOut)
	if !errors.Is(err, recommended.ErrRejected) {
		t.Errorf("Main -bidder: %v, want ErrRejected", err)
	}
	if want := "users recommend: 2 lines, 1 users set (0 cleared), 1 rejected, 0 failed, to " + a.Store + " through the bidder at http://" + s.AdminAddr(); !strings.Contains(out.String(), want) {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if !strings.HasPrefix(errOut.String(), "line 2: ") {
		t.Errorf("stderr %q, want line 2's reason", errOut.String())
	}
	p = profile(t, s, "reco-1")
	if !reflect.DeepEqual(p.Recommended, []user.GroupIDs{{Group: 3, IDs: []int64{9}}}) || !reflect.DeepEqual(p.ViewedIn(1), []int64{1}) {
		t.Errorf("reco-1 after Main -bidder: %+v", p)
	}
	// -bidder writes to the bidder's store: -data names another one.
	err = recommended.Main(context.Background(), []string{"-in", in, "-bidder", "http://" + s.AdminAddr(), "-data", t.TempDir()}, &out, &errOut)
	if !errors.Is(err, recommended.ErrUsage) || !strings.Contains(err.Error(), "-data") {
		t.Errorf("-bidder with -data: %v, want a usage error naming -data", err)
	}
}

// TestAdminUsersRecommendedWithViews: bids and views go on while a load
// runs; every view is kept and every line of the load is written (the
// embedded store's SetRecommended and RecordView of one user exclude each
// other).
func TestAdminUsersRecommendedWithViews(t *testing.T) {
	s := startWithBulkUser(t, testConfig(t))
	const users, viewed = 400, 40
	var body strings.Builder
	for i := range users {
		fmt.Fprintf(&body, `{"uid": "c-%d", "recommended": [{"group": 2, "ids": [%d, %d]}]}`+"\n", i, i+1, i+2)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		bid := bannerRequest(t)
		for i := range viewed {
			view(t, s, fmt.Sprintf("c-%d", i), 1, int64(i+1))
			resp, err := http.Post("http://"+s.Addr()+bidder.PathBid, "application/json", bytes.NewReader(bid))
			if err != nil {
				t.Errorf("bid during the load: %v", err)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"seatbid"`) {
				t.Errorf("bid during the load: %d %.200s", resp.StatusCode, b)
			}
		}
	}()
	st, a := postRecommended(t, s, "application/jsonl", body.String())
	wg.Wait()
	if st != 200 || a.Lines != users || a.Set != users || a.Rejected != 0 || a.Failed != 0 {
		t.Fatalf("answer %d %+v", st, a)
	}
	for i := range users {
		p := profile(t, s, fmt.Sprintf("c-%d", i))
		if got := p.RecommendedIn(2); !reflect.DeepEqual(got, []int64{int64(i + 1), int64(i + 2)}) {
			t.Errorf("c-%d: recommended %v", i, got)
		}
		if i < viewed && !reflect.DeepEqual(p.ViewedIn(1), []int64{int64(i + 1)}) {
			t.Errorf("c-%d: viewed %v, want its view kept", i, p.ViewedIn(1))
		}
	}
}

// TestAdminUsersRecommendedShutdown: a load in progress, its client
// still sending, stops when the bidder shuts down: the lines read are
// written, the answer is 503 saying why, and Shutdown is clean.
func TestAdminUsersRecommendedShutdown(t *testing.T) {
	s, shutdown := startStoppable(t, testConfig(t))
	pr, pw := io.Pipe()
	defer pw.Close()
	type answer struct {
		status int
		a      recommended.Answer
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Post("http://"+s.AdminAddr()+"/admin/users/recommended", "application/x-ndjson", pr)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var a recommended.Answer
		err = json.NewDecoder(resp.Body).Decode(&a)
		answered <- answer{resp.StatusCode, a, err}
	}()
	if _, err := io.WriteString(pw, `{"uid": "first", "recommended": [{"group": 1, "ids": [1]}]}`+"\n"); err != nil {
		t.Fatal(err)
	}
	// Wait until the first line is written (the body stays open).
	var p user.Profile
	for deadline := time.Now().Add(30 * time.Second); ; {
		found, err := s.Users().Get(context.Background(), "first", &p)
		if err != nil {
			t.Fatal(err)
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first line of the body was not written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := shutdown(); err != nil {
		t.Errorf("Shutdown during a load: %v", err)
	}
	var got answer
	select {
	case got = <-answered:
	case <-time.After(time.Minute): // a guard against a hang, not a bound
		pw.CloseWithError(errors.New("no answer after the shutdown"))
		got = <-answered
	}
	if got.err != nil || got.status != http.StatusServiceUnavailable || got.a.Set != 1 || !strings.Contains(got.a.Error, "shutting down") {
		t.Errorf("answer %d %+v %v: want 503, 1 set, the bidder shutting down", got.status, got.a, got.err)
	}
}
