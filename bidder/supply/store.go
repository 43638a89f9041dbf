package supply

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Kinds of files, the kind label of the rtbd_supply_* metrics.
const (
	KindSellers = iota // sellers/<domain>.json
	KindAds            // ads/<domain>.txt
	KindAppAds         // app-ads/<domain>.txt
	numKinds
)

var kindNames = [numKinds]string{"sellers", "ads", "app_ads"}
var kindDirs = [numKinds]string{"sellers", "ads", "app-ads"}
var kindExts = [numKinds]string{".json", ".txt", ".txt"}

// MaxFileBytes bounds one file; a larger one is not read (its last good
// version is kept).
const MaxFileBytes = 256 << 20

// Index is one snapshot of every file, immutable: hold it for a whole
// request. A nil *Index has no files.
type Index struct {
	sellers   map[string]*Sellers // by advertising system domain
	ads       map[string]*AdsTxt  // by site domain
	appAdsTxt map[string]*AdsTxt  // by app developer domain
	reg       *registrableCache
}

// Counts returns the number of files of each kind and their entries
// (sellers ids, ads.txt and app-ads.txt records).
func (ix *Index) Counts() (files, entries [numKinds]int) {
	if ix == nil {
		return
	}
	for _, s := range ix.sellers {
		files[KindSellers]++
		entries[KindSellers] += s.Len()
	}
	for k, m := range [...]map[string]*AdsTxt{KindAds: ix.ads, KindAppAds: ix.appAdsTxt} {
		for _, a := range m {
			files[k]++
			entries[k] += a.Records()
		}
	}
	return
}

// Options configure a Store.
type Options struct {
	// Dir is supply.dir, the directory of sellers/, ads/ and app-ads/.
	Dir string
	// Log receives the refresh problems (nil: none).
	Log *zap.Logger
	// Registerer gets the store's metrics (nil: none).
	Registerer prometheus.Registerer
}

// Store keeps the Index of a directory's files current. Safe for
// concurrent use: Index is a lock-free load.
type Store struct {
	dir string
	log *zap.Logger
	reg *registrableCache
	cur atomic.Pointer[Index]

	mu    sync.Mutex // one Refresh at a time
	files map[string]*file

	badLines [numKinds]prometheus.Counter
	refresh  [2]prometheus.Counter // ok, error
	gauges   func()                // sets rtbd_supply_files and rtbd_supply_entries
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// file is one file as last read: its stat and what it parsed to.
type file struct {
	size    int64
	mod     time.Time
	sellers *Sellers
	ads     *AdsTxt
}

// ErrDir: supply.dir cannot be read.
var ErrDir = errors.New("supply: supply.dir cannot be read")

// Open reads every file of opts.Dir and returns the Store. Only a
// directory that cannot be read is an error: files that cannot be read
// are logged and counted, and left out.
func Open(opts Options) (*Store, error) {
	s := &Store{dir: opts.Dir, log: opts.Log, reg: newRegistrableCache(), files: map[string]*file{}, stop: make(chan struct{})}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	bad := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_supply_bad_lines_total",
		Help: "Lines of ads.txt and app-ads.txt files (entries of sellers.json files) skipped as malformed, by kind: sellers, ads, app_ads. Counted when a changed file is read."},
		[]string{"kind"})
	for k, n := range kindNames {
		s.badLines[k] = bad.WithLabelValues(n)
	}
	refresh := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_supply_refresh_total",
		Help: "Reads of supply.dir, by result: ok, error (the directory or a file could not be read or parsed: its last good version kept)."},
		[]string{"result"})
	s.refresh[0], s.refresh[1] = refresh.WithLabelValues("ok"), refresh.WithLabelValues("error")
	filesG := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rtbd_supply_files",
		Help: "Files of supply.dir in use, by kind: sellers, ads, app_ads."}, []string{"kind"})
	entriesG := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rtbd_supply_entries",
		Help: "Entries of the files of supply.dir in use, by kind: sellers (seller ids), ads and app_ads (records)."}, []string{"kind"})
	if err := s.Refresh(); err != nil {
		return nil, err
	}
	s.setGauges(filesG, entriesG)
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{bad, refresh, filesG, entriesG} {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("supply: metrics: %w", err)
			}
		}
	}
	s.gauges = func() { s.setGauges(filesG, entriesG) }
	return s, nil
}

func (s *Store) setGauges(files, entries *prometheus.GaugeVec) {
	f, e := s.Index().Counts()
	for k, n := range kindNames {
		files.WithLabelValues(n).Set(float64(f[k]))
		entries.WithLabelValues(n).Set(float64(e[k]))
	}
}

// Index returns the current snapshot. Nil-safe: a nil Store has none.
func (s *Store) Index() *Index {
	if s == nil {
		return nil
	}
	return s.cur.Load()
}

// Refresh reads the directory again: files that changed (size or
// modification time) are parsed again, files gone are dropped, files that
// cannot be read keep their last good version. The new Index replaces the
// old one atomically. The error says what could not be read (the rest was
// refreshed); an unreadable directory keeps the whole last Index.
func (s *Store) Refresh() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(s.dir); err != nil {
		s.count(false)
		return fmt.Errorf("%w: %v", ErrDir, err)
	}
	ix := &Index{sellers: map[string]*Sellers{}, ads: map[string]*AdsTxt{}, appAdsTxt: map[string]*AdsTxt{}, reg: s.reg}
	seen := map[string]bool{}
	var errs []error
	for k := range numKinds {
		sub := filepath.Join(s.dir, kindDirs[k])
		entries, err := os.ReadDir(sub)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("supply: %s: %w", sub, err))
				s.keepKind(ix, k, seen) // nothing of this kind could be listed: keep it all
			}
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, kindExts[k]) {
				continue
			}
			domain := strings.ToLower(trimDot(strings.TrimSuffix(name, kindExts[k])))
			if domain == "" {
				continue
			}
			rel := kindDirs[k] + "/" + name
			seen[rel] = true
			f, err := s.load(k, rel)
			if err != nil {
				errs = append(errs, err)
			}
			if f != nil {
				ix.put(k, domain, f)
			}
		}
	}
	for rel := range s.files {
		if !seen[rel] {
			delete(s.files, rel)
		}
	}
	s.cur.Store(ix)
	if s.gauges != nil {
		s.gauges()
	}
	s.count(len(errs) == 0)
	return errors.Join(errs...)
}

func (s *Store) count(ok bool) {
	if s.refresh[0] == nil {
		return
	}
	if ok {
		s.refresh[0].Inc()
	} else {
		s.refresh[1].Inc()
	}
}

// keepKind copies the files of kind k of the current Index into ix.
func (s *Store) keepKind(ix *Index, k int, seen map[string]bool) {
	old := s.cur.Load()
	if old == nil {
		return
	}
	switch k {
	case KindSellers:
		for d, v := range old.sellers {
			ix.sellers[d] = v
		}
	case KindAds:
		for d, v := range old.ads {
			ix.ads[d] = v
			seen[v.name] = true
		}
	case KindAppAds:
		for d, v := range old.appAdsTxt {
			ix.appAdsTxt[d] = v
			seen[v.name] = true
		}
	}
	for rel := range s.files {
		if strings.HasPrefix(rel, kindDirs[k]+"/") {
			seen[rel] = true
		}
	}
}

func (ix *Index) put(k int, domain string, f *file) {
	switch {
	case k == KindSellers && f.sellers != nil:
		ix.sellers[domain] = f.sellers
	case k == KindAds && f.ads != nil:
		ix.ads[domain] = f.ads
	case k == KindAppAds && f.ads != nil:
		ix.appAdsTxt[domain] = f.ads
	}
}

// load returns file rel (a path under the directory) parsed: as last time
// when its size and modification time did not change; parsed again when
// they did; its last good version (and the error) when it cannot be read
// or parsed; nil and the error when it never could.
func (s *Store) load(k int, rel string) (*file, error) {
	prev := s.files[rel]
	path := filepath.Join(s.dir, rel)
	fail := func(err error) (*file, error) {
		s.log.Warn("supply: file unusable, last good version kept", zap.String("file", path), zap.Bool("kept", prev != nil), zap.Error(err))
		return prev, fmt.Errorf("supply: %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fail(err)
	}
	if prev != nil && prev.size == fi.Size() && prev.mod.Equal(fi.ModTime()) {
		return prev, nil
	}
	if fi.Size() > MaxFileBytes {
		return fail(fmt.Errorf("larger than %d bytes", MaxFileBytes))
	}
	fh, err := os.Open(path)
	if err != nil {
		return fail(err)
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	fh.Close()
	if err != nil {
		return fail(err)
	}
	f := &file{size: fi.Size(), mod: fi.ModTime()}
	var bad int
	var sample []BadLine
	if k == KindSellers {
		if f.sellers, bad, sample, err = ParseSellers(data); err != nil {
			return fail(err)
		}
	} else {
		f.ads, bad, sample = ParseAdsTxt(data)
		f.ads.name = rel
	}
	if bad > 0 {
		if s.badLines[k] != nil {
			s.badLines[k].Add(float64(bad))
		}
		lines := make([]string, len(sample))
		for i, b := range sample {
			lines[i] = b.String()
		}
		s.log.Info("supply: bad lines skipped", zap.String("file", path), zap.Int("bad", bad), zap.Strings("sample", lines))
	}
	s.files[rel] = f
	return f, nil
}

// Start refreshes the Store every interval until Close; failures are
// logged (by Refresh's callers: here) and counted.
func (s *Store) Start(interval time.Duration) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				if err := s.Refresh(); err != nil {
					s.log.Warn("supply: refresh incomplete", zap.Error(err))
				}
			}
		}
	}()
}

// Close stops the refreshes and waits for one in progress. Nil-safe.
func (s *Store) Close() {
	if s == nil {
		return
	}
	s.stopOnce.Do(func() { close(s.stop) })
	s.wg.Wait()
}
