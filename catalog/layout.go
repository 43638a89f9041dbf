package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// File names inside a data directory. See the package comment.
const (
	CurrentFile  = "CURRENT"
	PreviousFile = "PREVIOUS"
	LockFile     = "LOCK"
	VersionsDir  = "versions"
	readersFile  = "READERS"
)

// ErrNoVersion: the data directory has no published version.
var ErrNoVersion = errors.New("catalog: no index version published")

// newVersionName returns a fresh, sortable version name for time t.
func newVersionName(t time.Time) string {
	return "v" + t.UTC().Format("20060102T150405.000000000Z")
}

// VersionTime is when version name was created (by Builder or an ingest),
// read from the name; ok is false for a name not made by newVersionName.
func VersionTime(name string) (t time.Time, ok bool) {
	t, err := time.Parse("20060102T150405.000000000Z", strings.TrimPrefix(name, "v"))
	return t, err == nil && strings.HasPrefix(name, "v")
}

// VersionPath is the directory of version name under data dir.
func VersionPath(dir, name string) string {
	return filepath.Join(dir, VersionsDir, name)
}

func validVersionName(name string) bool {
	return strings.HasPrefix(name, "v") && !strings.ContainsAny(name, "/\\ \n\x00") && name != "v"
}

// ReadPointer returns the version named by DIR/CURRENT (or PREVIOUS).
// A missing file is ErrNoVersion.
func ReadPointer(dir, file string) (string, error) {
	name, _, err := readPointer(dir, file)
	return name, err
}

// ReadCurrent returns the live version's name and generation (DIR/CURRENT).
// A CURRENT without a generation line (written before generations
// existed) is generation 0. A missing file is ErrNoVersion.
func ReadCurrent(dir string) (name string, generation uint64, err error) {
	return readPointer(dir, CurrentFile)
}

// readPointer parses a pointer file: the version name on the first line,
// then optionally "generation N".
func readPointer(dir, file string) (string, uint64, error) {
	path := filepath.Join(dir, file)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", 0, fmt.Errorf("%w: %s", ErrNoVersion, path)
	}
	if err != nil {
		return "", 0, fmt.Errorf("catalog: reading %s: %w", path, err)
	}
	first, rest, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	name := strings.TrimSpace(first)
	if !validVersionName(name) {
		return "", 0, fmt.Errorf("%w: %s names %q, not a version", ErrCorrupt, path, name)
	}
	var gen uint64
	if rest = strings.TrimSpace(rest); rest != "" {
		v, ok := strings.CutPrefix(rest, "generation ")
		g, perr := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if !ok || perr != nil {
			return "", 0, fmt.Errorf("%w: %s: bad second line %q, want \"generation N\"", ErrCorrupt, path, rest)
		}
		gen = g
	}
	return name, gen, nil
}

// writePointer atomically makes DIR/file name version, with generation gen
// (0: none written): it writes a temporary file, fsyncs it, renames it over
// file and fsyncs the directory, so a crash leaves either the old or the
// new pointer, never a torn one.
func writePointer(dir, file, name string, gen uint64) error {
	if !validVersionName(name) {
		return fmt.Errorf("catalog: bad version name %q", name)
	}
	tmp := filepath.Join(dir, file+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	text := name + "\n"
	if gen > 0 {
		text += "generation " + strconv.FormatUint(gen, 10) + "\n"
	}
	if _, err = f.WriteString(text); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("catalog: writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("catalog: fsync %s: %w", dir, err)
	}
	return nil
}

// Publish makes version name the live one: the old CURRENT becomes PREVIOUS
// (the rollback target), then CURRENT is switched atomically, with the
// directory's generation one more than the old CURRENT's. Versions that
// are neither CURRENT nor PREVIOUS are then removed if no process reads them.
// The caller must hold the data directory's lock (LockDir): the two pointer
// writes are not one step, and the lock keeps sweeps out of the gap.
func Publish(dir, name string) error {
	if _, err := os.Stat(VersionPath(dir, name)); err != nil {
		return fmt.Errorf("catalog: publish %s: %w", name, err)
	}
	old, gen, err := ReadCurrent(dir)
	switch {
	case err == nil && old != name:
		if err := writePointer(dir, PreviousFile, old, 0); err != nil {
			return err
		}
	case err != nil && !errors.Is(err, ErrNoVersion):
		return err
	}
	if err := writePointer(dir, CurrentFile, name, gen+1); err != nil {
		return err
	}
	_, _ = RemoveUnusedVersions(dir)
	return nil
}

// Rollback makes PREVIOUS the live version again and the current one
// PREVIOUS, so a second rollback undoes the first. Like Publish, it raises
// the generation in CURRENT by one. The caller must hold the
// data directory's lock (LockDir), as for Publish.
func Rollback(dir string) (from, to string, err error) {
	cur, gen, err := ReadCurrent(dir)
	if err != nil {
		return "", "", err
	}
	prev, err := ReadPointer(dir, PreviousFile)
	if err != nil {
		return "", "", fmt.Errorf("catalog: no previous version to roll back to: %w", err)
	}
	if _, err := os.Stat(VersionPath(dir, prev)); err != nil {
		return "", "", fmt.Errorf("catalog: previous version %s is gone: %w", prev, err)
	}
	if err := writePointer(dir, PreviousFile, cur, 0); err != nil {
		return "", "", err
	}
	if err := writePointer(dir, CurrentFile, prev, gen+1); err != nil {
		return "", "", err
	}
	return cur, prev, nil
}

// RemoveUnusedVersions deletes version directories that are neither CURRENT
// nor PREVIOUS and that no process holds open (their READERS lock is free),
// including half-built ones left by a crashed ingest. It returns the names
// removed. A version still being built is protected by the ingest LOCK: call
// this only while holding it, or from Publish.
func RemoveUnusedVersions(dir string) ([]string, error) {
	var removed []string
	err := forUnusedVersions(dir, func(name string) {
		if os.RemoveAll(VersionPath(dir, name)) == nil {
			removed = append(removed, name)
		}
	})
	return removed, err
}

// forUnusedVersions calls remove with each version that is neither CURRENT
// nor PREVIOUS, not being built, and not read: it holds the version's
// READERS lock exclusively during the call, so no process can open it then.
func forUnusedVersions(dir string, remove func(name string)) error {
	keep := map[string]bool{}
	for _, f := range []string{CurrentFile, PreviousFile} {
		if n, err := ReadPointer(dir, f); err == nil {
			keep[n] = true
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, VersionsDir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("catalog: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || keep[e.Name()] || building(dir, e.Name()) {
			continue
		}
		rl, err := tryLockExclusive(filepath.Join(VersionPath(dir, e.Name()), readersFile))
		if err != nil {
			continue // someone still reads it
		}
		remove(e.Name())
		rl.Close()
	}
	return nil
}

// sweepVersions is RemoveUnusedVersions for serving processes, which read
// the directory but do not own it. Removing a version is safe only while no
// builder, Publish or Rollback runs (a version is in the making before it is
// named, and the pointers change in two writes), so it takes the ingest
// LOCK first, without waiting: ErrLocked means an ingest runs (and will
// sweep itself at Publish); try again later. It holds the lock only to pick
// the versions and rename each out of versions/ (to DIR/tmp-NAME, a name
// the next ingest clears if this process dies first), then deletes them
// unlocked, so an ingest that starts meanwhile waits milliseconds at most
// (LockDir waits up to LockWait). A directory whose LOCK cannot be opened
// (read-only) is an error, not swept.
func sweepVersions(dir string) ([]string, error) {
	lock, err := tryLockExclusive(filepath.Join(dir, LockFile))
	if err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("catalog: locking %s: %w", filepath.Join(dir, LockFile), err)
	}
	var names, tmps []string
	err = forUnusedVersions(dir, func(name string) {
		tmp := filepath.Join(dir, "tmp-"+name)
		if os.Rename(VersionPath(dir, name), tmp) == nil {
			names, tmps = append(names, name), append(tmps, tmp)
		}
	})
	lock.Close()
	var removed []string
	for i, tmp := range tmps {
		if os.RemoveAll(tmp) == nil {
			removed = append(removed, names[i])
		}
	}
	return removed, err
}

// building reports whether name is a version an ingest is writing now: its
// directory holds a BUILDING marker whose lock is held.
func building(dir, name string) bool {
	m := filepath.Join(VersionPath(dir, name), buildingFile)
	if _, err := os.Stat(m); err != nil {
		return false
	}
	l, err := tryLockExclusive(m)
	if err != nil {
		return true
	}
	l.Close()
	return false
}

const buildingFile = "BUILDING"

// fileLock is an flock(2) on a file; Close releases it.
type fileLock struct{ f *os.File }

func (l *fileLock) Close() error { return l.f.Close() }

func tryLock(path string, how int) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return &fileLock{f}, nil
}

func tryLockExclusive(path string) (*fileLock, error) { return tryLock(path, unix.LOCK_EX) }
func lockShared(path string) (*fileLock, error)       { return tryLock(path, unix.LOCK_SH) }

// ErrLocked: another ingest holds the data directory's LOCK.
var ErrLocked = errors.New("catalog: data directory is locked by another ingest")

// LockWait is how long LockDir waits for the lock before ErrLocked: long
// enough to outwait a serving process's sweep of old versions (which holds
// it for a few renames), short enough that a second ingest is told quickly.
var LockWait = time.Second

// LockDir takes the data directory's ingest lock. It fails with ErrLocked
// (naming the lock file) if another process still holds it after LockWait.
// The lock is released by Close or when the process dies, even by kill -9.
func LockDir(dir string) (interface{ Close() error }, error) {
	if err := os.MkdirAll(filepath.Join(dir, VersionsDir), 0o755); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	p := filepath.Join(dir, LockFile)
	deadline := time.Now().Add(LockWait)
	for {
		l, err := tryLockExclusive(p)
		switch {
		case err == nil:
			return l, nil
		case !errors.Is(err, unix.EWOULDBLOCK):
			return nil, fmt.Errorf("catalog: locking %s: %w", p, err)
		case time.Now().After(deadline):
			return nil, fmt.Errorf("%w (%s)", ErrLocked, p)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
