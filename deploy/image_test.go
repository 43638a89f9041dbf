package deploy

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"sigs.k8s.io/yaml"
)

// imageConfig is the part of `podman image inspect` the test reads.
type imageConfig struct {
	Size   int64
	Config struct {
		User       string
		Env        []string
		Entrypoint []string
		Cmd        []string
		WorkingDir string
		Volumes    map[string]struct{}
	}
}

// runner runs the image's entrypoint with args, in the background
// (start) or to its end (run).
type runner interface {
	run(t *testing.T, args ...string) ([]byte, error)
	start(t *testing.T, args ...string) *proc
	// host is the host's path of a path of the container's /data.
	host(path string) string
	describe() string
}

// TestImage runs the image `make image` built (DEPLOY_IMAGE): it makes
// the demo with the image's own binary on the data volume, serves it,
// and gets /readyz and a bid on loopback. With podman run where it works;
// where it cannot (a sandbox without the cgroups or rlimits an OCI
// runtime needs), from the image's root file system (podman export)
// under chroot, as the image's user, with the image's environment,
// working directory and entrypoint: what the runtime would do, less the
// namespaces.
func TestImage(t *testing.T) {
	image := os.Getenv("DEPLOY_IMAGE")
	if image == "" {
		t.Skip("DEPLOY_IMAGE is unset: `make test-deploy` builds the image and sets it")
	}
	out, err := exec.Command("podman", "image", "inspect", image).Output()
	if err != nil {
		t.Fatalf("podman image inspect %s: %v", image, err)
	}
	var cfgs []imageConfig
	if err := json.Unmarshal(out, &cfgs); err != nil || len(cfgs) != 1 {
		t.Fatalf("podman image inspect: %v", err)
	}
	cfg := cfgs[0]
	t.Logf("image %s: %.1f MiB", image, float64(cfg.Size)/(1<<20))
	uid, gid := imageUser(t, cfg.Config.User)
	if uid == 0 {
		t.Errorf("the image runs as root (User %q)", cfg.Config.User)
	}
	if _, ok := cfg.Config.Volumes["/data"]; !ok || cfg.Config.WorkingDir != "/data" {
		t.Errorf("volumes %v, working directory %q: want the /data volume", cfg.Config.Volumes, cfg.Config.WorkingDir)
	}
	for _, kv := range imageEnv(t) {
		if !slices.Contains(cfg.Config.Env, kv) {
			t.Errorf("the image's environment lacks %s (image/Containerfile.scratch)", kv)
		}
	}

	var r runner
	if msg, ok := podmanRuns(image); ok {
		r = newPodmanRunner(t, image, uid, gid)
	} else {
		t.Logf("podman run does not work here (%s): running the image's root file system under chroot", msg)
		r = newChrootRunner(t, image, cfg, uid, gid)
	}
	t.Logf("runner: %s", r.describe())
	// The image's own configuration: reachable listeners, data on the volume.
	out, err = r.run(t, "config")
	if err != nil {
		t.Fatalf("rtbd config in the image: %v\n%s", err, out)
	}
	var eff map[string]any
	if err := yaml.Unmarshal(out, &eff); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"admin.listen": "0.0.0.0:", "bidder.http_listen": "0.0.0.0:", "catalog.grpc_listen": "0.0.0.0:",
		"catalog.data": "/data/", "bidder.data_dir": "/data/",
	} {
		if v := setting(t, eff, key); !strings.HasPrefix(v, want) {
			t.Errorf("the image's %s is %q, want %s...", key, v, want)
		}
	}
	if out, err := r.run(t, "gen", "-demo", "-hint=false", "-out", "/data/demo"); err != nil {
		t.Fatalf("rtbd gen -demo in the image: %v\n%s", err, out)
	}
	httpAddr, adminAddr := freeAddr(t), freeAddr(t)
	p := r.start(t, "-config", "/data/demo/rtbd.yaml", "-http-listen", httpAddr, "-admin-listen", adminAddr, "-set", "bidder.shutdown_delay=0s")
	waitReady(t, "http://"+adminAddr+"/readyz", p)
	bid(t, httpAddr, r.host("/data/demo/sample-request.json"), true)
}

// imageUser parses the image's User ("uid[:gid]", numeric: a scratch
// image has no user database to look a name up in at run time).
func imageUser(t *testing.T, user string) (uid, gid int) {
	t.Helper()
	u, g, _ := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil {
		t.Fatalf("image user %q: want a numeric uid", user)
	}
	gid = uid
	if g != "" {
		if gid, err = strconv.Atoi(g); err != nil {
			t.Fatalf("image user %q: want a numeric gid", user)
		}
	}
	return uid, gid
}

// podmanRuns reports whether `podman run` works here, and if not why.
func podmanRuns(image string) (string, bool) {
	out, err := exec.Command("podman", "run", "--rm", "--network", "host", image, "help").CombinedOutput()
	if err != nil {
		return strings.TrimSpace(string(out)), false
	}
	return "", true
}

// podmanRunner: podman run, the host's network, a host directory as /data.
type podmanRunner struct {
	image, data string
}

func newPodmanRunner(t *testing.T, image string, uid, gid int) *podmanRunner {
	data := t.TempDir()
	if err := os.Chown(data, uid, gid); err != nil {
		t.Fatal(err)
	}
	return &podmanRunner{image: image, data: data}
}

func (r *podmanRunner) describe() string { return "podman run" }
func (r *podmanRunner) host(path string) string {
	return filepath.Join(r.data, strings.TrimPrefix(path, "/data"))
}

func (r *podmanRunner) cmd(args ...string) *exec.Cmd {
	return exec.Command("podman", append([]string{"run", "--rm", "--network", "host", "-v", r.data + ":/data", r.image}, args...)...)
}

func (r *podmanRunner) run(t *testing.T, args ...string) ([]byte, error) {
	return r.cmd(args...).CombinedOutput()
}

func (r *podmanRunner) start(t *testing.T, args ...string) *proc {
	cmd := r.cmd(args...)
	cmd.Env = os.Environ()
	return start(t, cmd)
}

// chrootRunner: the image's root file system, unpacked, under chroot.
type chrootRunner struct {
	root     string
	cfg      imageConfig
	uid, gid int
}

func newChrootRunner(t *testing.T, image string, cfg imageConfig, uid, gid int) *chrootRunner {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("podman run does not work here and chroot needs root")
	}
	id, err := exec.Command("podman", "create", image).Output()
	if err != nil {
		t.Fatalf("podman create: %v", err)
	}
	ctr := strings.TrimSpace(string(id))
	defer exec.Command("podman", "rm", ctr).Run()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	export := exec.Command("podman", "export", ctr)
	pipe, err := export.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := export.Start(); err != nil {
		t.Fatal(err)
	}
	if err := untar(pipe, root); err != nil {
		t.Fatalf("unpacking the image: %v", err)
	}
	if err := export.Wait(); err != nil {
		t.Fatalf("podman export: %v", err)
	}
	// The volume's mount point as the image made it (owner, mode).
	if st, err := os.Stat(filepath.Join(root, "data")); err != nil || st.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
		t.Fatalf("the image's /data is not its user's: %v", err)
	}
	return &chrootRunner{root: root, cfg: cfg, uid: uid, gid: gid}
}

func (r *chrootRunner) describe() string        { return "chroot " + r.root }
func (r *chrootRunner) host(path string) string { return filepath.Join(r.root, path) }

func (r *chrootRunner) cmd(args ...string) *exec.Cmd {
	c := r.cfg.Config
	argv := append(slices.Clone(c.Entrypoint), args...)
	cmd := exec.Command(filepath.Join(r.root, argv[0]), argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Path = argv[0] // resolved inside the chroot
	cmd.Env = slices.Clone(c.Env)
	cmd.Dir = c.WorkingDir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     r.root,
		Credential: &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid)},
	}
	return cmd
}

func (r *chrootRunner) run(t *testing.T, args ...string) ([]byte, error) {
	return r.cmd(args...).CombinedOutput()
}

func (r *chrootRunner) start(t *testing.T, args ...string) *proc {
	return start(t, r.cmd(args...))
}

// untar unpacks a tar stream into dir with its owners and modes.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if name == "." || strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			continue
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, os.FileMode(h.Mode).Perm()); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, path); err != nil {
				return err
			}
		case tar.TypeLink:
			if err := os.Link(filepath.Join(dir, filepath.Clean(h.Linkname)), path); err != nil {
				return err
			}
		default:
			continue
		}
		if err := os.Lchown(path, h.Uid, h.Gid); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if h.Typeflag != tar.TypeSymlink {
			if err := os.Chmod(path, os.FileMode(h.Mode).Perm()); err != nil {
				return err
			}
		}
	}
}
