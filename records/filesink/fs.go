package filesink

import (
	"io"
	"io/fs"
	"os"
)

// FS is the file system the sink writes through: the operating system's
// (OS) in production; tests inject failures (a full disk, a directory
// deleted or unwritable) through it, since they run as root.
type FS interface {
	MkdirAll(path string, perm fs.FileMode) error
	// Create creates a new file for writing (it must not exist).
	Create(name string) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	RemoveAll(path string) error
	ReadDir(name string) ([]fs.DirEntry, error)
	ReadFile(name string) ([]byte, error)
}

// File is a file being written.
type File interface {
	io.Writer
	Sync() error
	Close() error
}

// OS is the operating system's file system.
type OS struct{}

func (OS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (OS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}
func (OS) Rename(oldpath, newpath string) error       { return os.Rename(oldpath, newpath) }
func (OS) Remove(name string) error                   { return os.Remove(name) }
func (OS) RemoveAll(path string) error                { return os.RemoveAll(path) }
func (OS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (OS) ReadFile(name string) ([]byte, error)       { return os.ReadFile(name) }
