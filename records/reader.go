package records

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"
)

// Partition is the complete files of one kind and one hour.
type Partition struct {
	Kind Kind
	// Hour is the partition's hour (UTC, minutes and below zero).
	Hour time.Time
	// Dir is the partition's directory; Files its complete files' paths,
	// in name order (hidden files, still being written, are not listed).
	Dir   string
	Files []string
}

// Partitions lists the partitions of kind k under root whose hour
// overlaps [from, to), oldest first. A zero from or to is unbounded. A
// missing root or kind directory is no partition, not an error.
func Partitions(root string, k Kind, from, to time.Time) ([]Partition, error) {
	kdir := filepath.Join(root, "kind="+k.String())
	dates, err := os.ReadDir(kdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	var out []Partition
	for _, d := range dates {
		day, ok := parseDate(d.Name())
		if !ok || !d.IsDir() {
			continue
		}
		if !to.IsZero() && !day.Before(to) || !from.IsZero() && !day.Add(24*time.Hour).After(from) {
			continue
		}
		hours, err := os.ReadDir(filepath.Join(kdir, d.Name()))
		if err != nil {
			return nil, fmt.Errorf("records: %w", err)
		}
		for _, h := range hours {
			hh, ok := parseHour(h.Name())
			if !ok || !h.IsDir() {
				continue
			}
			hour := day.Add(time.Duration(hh) * time.Hour)
			if !to.IsZero() && !hour.Before(to) || !from.IsZero() && !hour.Add(time.Hour).After(from) {
				continue
			}
			p := Partition{Kind: k, Hour: hour, Dir: filepath.Join(kdir, d.Name(), h.Name())}
			files, err := os.ReadDir(p.Dir)
			if err != nil {
				return nil, fmt.Errorf("records: %w", err)
			}
			for _, f := range files {
				if _, _, ok := ParseFileName(f.Name()); ok && f.Type().IsRegular() {
					p.Files = append(p.Files, filepath.Join(p.Dir, f.Name()))
				}
			}
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Partition) int { return a.Hour.Compare(b.Hour) })
	return out, nil
}

// Scan calls fn for every record of kind k under root with from <= Time <
// to (a zero bound is unbounded), partition by partition, oldest first,
// and file by file within a partition. It reads a file a row group at a
// time, so its memory does not grow with the data. fn's record is reused
// after fn returns: copy what it keeps. An error from fn stops the scan
// and is returned.
func Scan(root string, k Kind, from, to time.Time, fn func(*Record) error) error {
	parts, err := Partitions(root, k, from, to)
	if err != nil {
		return err
	}
	for _, p := range parts {
		for _, f := range p.Files {
			err := ReadFile(f, k, func(r *Record) error {
				if !from.IsZero() && r.Time.Before(from) || !to.IsZero() && !r.Time.Before(to) {
					return nil
				}
				return fn(r)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// readBatch is how many rows ReadFile decodes at once.
const readBatch = 256

// ReadFile calls fn for every record of the Parquet file at path, of kind
// k (the file's partition). fn's record is reused after fn returns.
func ReadFile(path string, k Kind, fn func(*Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("records: %w", err)
	}
	defer f.Close()
	rd := parquet.NewGenericReader[Row](f)
	defer rd.Close()
	rows := make([]Row, readBatch)
	var rec Record
	for {
		n, err := rd.Read(rows)
		for i := range rows[:n] {
			rec.FromRow(k, &rows[i])
			if err := fn(&rec); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("records: %s: %w", path, err)
		}
		if n == 0 {
			return nil
		}
	}
}
