package deploy

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const kustomizeDir = "kubernetes"

// object is one decoded manifest.
type object struct {
	where string // file:document
	kind  string
	name  string
	obj   any // *corev1.Service, *appsv1.StatefulSet, ...
}

// newObject returns an empty object of a kind the kit uses.
func newObject(kind string) (any, bool) {
	switch kind {
	case "Namespace":
		return &corev1.Namespace{}, true
	case "Secret":
		return &corev1.Secret{}, true
	case "ConfigMap":
		return &corev1.ConfigMap{}, true
	case "Service":
		return &corev1.Service{}, true
	case "PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}, true
	case "StatefulSet":
		return &appsv1.StatefulSet{}, true
	case "CronJob":
		return &batchv1.CronJob{}, true
	case "HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, true
	case "PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, true
	}
	return nil, false
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// decodeStrict decodes every document of a YAML stream into its
// Kubernetes type: a field the type does not have, a duplicate field or a
// value of the wrong type is an error.
func decodeStrict(where string, data []byte) ([]object, error) {
	var objs []object
	for i, doc := range docSeparator.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", where, i, err)
		}
		obj, ok := newObject(head.Kind)
		if !ok {
			return nil, fmt.Errorf("%s:%d: kind %q (%s) is not one the kit checks", where, i, head.Kind, head.APIVersion)
		}
		if err := unmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s:%d (%s %s): %v", where, i, head.Kind, head.Metadata.Name, err)
		}
		objs = append(objs, object{where: fmt.Sprintf("%s:%d", where, i), kind: head.Kind, name: head.Metadata.Name, obj: obj})
	}
	return objs, nil
}

// unmarshalStrict decodes YAML into v as the API server does: field names
// match exactly (encoding/json would take "clusterIp" for clusterIP), an
// unknown or duplicate field is an error.
func unmarshalStrict(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(j, v, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestManifestsDecodeStrictly: every manifest file, and the kustomization,
// decodes strictly into its type; a misspelled field would not.
func TestManifestsDecodeStrictly(t *testing.T) {
	k, err := os.ReadFile(filepath.Join(kustomizeDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kust kusttypes.Kustomization
	if err := unmarshalStrict(k, &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if len(kust.Resources) == 0 {
		t.Fatal("kustomization.yaml lists no resources")
	}
	files, _ := filepath.Glob(filepath.Join(kustomizeDir, "*.yaml"))
	var listed []string
	for _, r := range kust.Resources {
		listed = append(listed, filepath.Join(kustomizeDir, r))
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		if !slices.Contains(listed, f) {
			t.Errorf("%s is not in kustomization.yaml's resources", f)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeStrict(f, data); err != nil {
			t.Error(err)
		}
	}
	bad := "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  clusterIp: None\n"
	if _, err := decodeStrict("misspelled", []byte(bad)); err == nil {
		t.Error("a Service with spec.clusterIp (for clusterIP) decoded: the decoding is not strict")
	}
}

var (
	builtOnce sync.Once
	built     []object
	builtYAML []byte
	builtErr  error
)

// kustomizeBuild builds kubernetes/ with the kustomize API (what
// `kubectl kustomize` runs) and decodes its output strictly.
func kustomizeBuild(t *testing.T) []object {
	t.Helper()
	builtOnce.Do(func() {
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		m, err := k.Run(filesys.MakeFsOnDisk(), kustomizeDir)
		if err != nil {
			builtErr = fmt.Errorf("kustomize build: %v", err)
			return
		}
		if builtYAML, err = m.AsYaml(); err != nil {
			builtErr = err
			return
		}
		built, builtErr = decodeStrict("kustomize build", builtYAML)
	})
	if builtErr != nil {
		t.Fatal(builtErr)
	}
	return built
}

// TestKustomizeBuild: kubernetes/ builds, with the kustomize API and,
// where kubectl is installed, with `kubectl kustomize`, to the same
// objects.
func TestKustomizeBuild(t *testing.T) {
	objs := kustomizeBuild(t)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.kind]++
	}
	for _, k := range []string{"StatefulSet", "Service", "CronJob", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ConfigMap", "Secret"} {
		if kinds[k] == 0 {
			t.Errorf("the build has no %s", k)
		}
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Logf("kubectl not installed: built with the kustomize API only")
		return
	}
	out, err := exec.Command(kubectl, "kustomize", kustomizeDir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	kobjs, err := decodeStrict("kubectl kustomize", out)
	if err != nil {
		t.Fatal(err)
	}
	names := func(os []object) []string {
		var s []string
		for _, o := range os {
			s = append(s, o.kind+"/"+o.name)
		}
		sort.Strings(s)
		return s
	}
	if a, b := names(objs), names(kobjs); !slices.Equal(a, b) {
		t.Errorf("kubectl kustomize built %v, the kustomize API %v", b, a)
	}
}

// find returns the built object of kind and name.
func find[T any](t *testing.T, objs []object, kind, name string) T {
	t.Helper()
	for _, o := range objs {
		if o.kind == kind && o.name == name {
			return o.obj.(T)
		}
	}
	t.Fatalf("no %s %s in the build", kind, name)
	var zero T
	return zero
}

// imageEnv reads the ENV of the image (image/Containerfile.scratch, the
// runtime stage of image/Dockerfile).
func imageEnv(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("image", "Containerfile.scratch"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "ENV "); ok {
			in, line = true, rest
		} else if !in {
			continue
		}
		cont := strings.HasSuffix(line, "\\")
		for _, kv := range strings.Fields(strings.TrimSuffix(line, "\\")) {
			env = append(env, kv)
		}
		in = cont
	}
	if len(env) == 0 {
		t.Fatal("the image sets no environment")
	}
	return env
}

// imageFiles are the files the image adds (container path -> source).
var imageFiles = map[string]string{"/etc/rtbd/rtbd.yaml": "image/rtbd.yaml"}

// pod is a pod of a workload as the test reproduces it: its files (the
// ConfigMaps and Secrets mounted, under root), its environment, and what
// each mount is.
type pod struct {
	name   string
	root   string            // stands for / of the container
	env    []string          // image ENV, then the container's env
	args   []string          // the container's args, paths under root
	mounts map[string]string // mount path -> "configMap NAME" | "secret NAME" | "pvc NAME" | ...
}

// local maps a path of the container to the test's copy of it.
func (p *pod) local(path string) string {
	if strings.HasPrefix(path, "/") {
		return filepath.Join(p.root, path)
	}
	return path
}

// newPod lays out the volumes of container c of pod template spec, named
// name, in a temporary root, and resolves its environment.
func newPod(t *testing.T, objs []object, name string, spec corev1.PodSpec, c corev1.Container) *pod {
	t.Helper()
	p := &pod{name: name, root: t.TempDir(), mounts: map[string]string{}}
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		dir := p.local(m.MountPath)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		v, ok := vols[m.Name]
		switch {
		case !ok:
			p.mounts[m.MountPath] = "claim " + m.Name // a volumeClaimTemplate's
		case v.ConfigMap != nil:
			p.mounts[m.MountPath] = "configMap " + v.ConfigMap.Name
			cm := find[*corev1.ConfigMap](t, objs, "ConfigMap", v.ConfigMap.Name)
			for k, data := range cm.Data {
				writeFile(t, filepath.Join(dir, k), data)
			}
		case v.Secret != nil:
			p.mounts[m.MountPath] = "secret " + v.Secret.SecretName
			s := find[*corev1.Secret](t, objs, "Secret", v.Secret.SecretName)
			for k, data := range s.StringData {
				writeFile(t, filepath.Join(dir, k), data)
			}
			for k, data := range s.Data {
				writeFile(t, filepath.Join(dir, k), string(data))
			}
		case v.PersistentVolumeClaim != nil:
			p.mounts[m.MountPath] = "pvc " + v.PersistentVolumeClaim.ClaimName
		default:
			p.mounts[m.MountPath] = "other " + m.Name
		}
	}
	// The image's own files (its config, the default of -config).
	for path, src := range imageFiles {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, p.local(path), string(data))
		p.mounts[path] = "image " + src
	}
	env := imageEnv(t)
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			v = name
		case e.ValueFrom.ResourceFieldRef != nil:
			q := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(e.ValueFrom.ResourceFieldRef.Resource, "limits."))]
			v = strconv.FormatInt(q.Value(), 10)
		default:
			t.Fatalf("%s: env %s: a source the test does not reproduce", name, e.Name)
		}
		env = append(env, e.Name+"="+v)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		p.env = append(p.env, k+"="+p.underRoot(v))
	}
	for _, a := range c.Args {
		p.args = append(p.args, p.underRoot(a))
	}
	return p
}

// underRoot maps a value that is a path inside a mount to the test's copy.
func (p *pod) underRoot(v string) string {
	for m := range p.mounts {
		if v == m || strings.HasPrefix(v, m+"/") {
			return p.local(v)
		}
	}
	return v
}

// mountOf returns the mount holding container path path ("" if none).
func (p *pod) mountOf(path string) string {
	best := ""
	for m := range p.mounts {
		if (path == m || strings.HasPrefix(path, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// containerPort resolves a probe's or Service's port (a number or a
// container port's name).
func containerPort(c corev1.Container, p intstr.IntOrString) (int32, bool) {
	if p.Type == intstr.Int {
		return p.IntVal, true
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

func portOf(t *testing.T, addr string) (host string, port int32) {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	n, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("listen address %q has no port", addr)
	}
	return addr[:i], int32(n)
}

// TestManifestsMatchBinary runs each server container of the build the
// way its pod would (its config file, its secrets as files, the image's
// and its environment) through `rtbd config`, and checks the manifests
// against what the binary says: flags, settings, ports, probes' routes,
// the termination grace period, the volumes, the secrets, the catalog
// target and the ingest jobs.
func TestManifestsMatchBinary(t *testing.T) {
	objs := kustomizeBuild(t)
	serverFlags, ingestFlags := flagsOf(t), flagsOf(t, "ingest")
	routes := adminRoutes(t)

	hpa := find[*autoscalingv2.HorizontalPodAutoscaler](t, objs, "HorizontalPodAutoscaler", "rtbd-bidder")
	bidders := find[*appsv1.StatefulSet](t, objs, "StatefulSet", hpa.Spec.ScaleTargetRef.Name)
	catalog := find[*appsv1.StatefulSet](t, objs, "StatefulSet", "rtbd-catalog")
	pdb := find[*policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", "rtbd-bidder")
	if !selects(pdb.Spec.Selector.MatchLabels, bidders.Spec.Template.Labels) {
		t.Errorf("the PodDisruptionBudget selects %v, not the bidders (%v)", pdb.Spec.Selector.MatchLabels, bidders.Spec.Template.Labels)
	}

	var catalogGRPC int32
	var catalogData string
	for _, sts := range []*appsv1.StatefulSet{catalog, bidders} {
		// The highest ordinal the pods get: its name is the longest
		// spend.instance_id.
		last := *sts.Spec.Replicas - 1
		if sts == bidders {
			last = hpa.Spec.MaxReplicas - 1
		}
		podName := fmt.Sprintf("%s-%d", sts.Name, last)
		if len(sts.Spec.Template.Spec.Containers) != 1 {
			t.Fatalf("%s: %d containers, the test knows one", sts.Name, len(sts.Spec.Template.Spec.Containers))
		}
		c := sts.Spec.Template.Spec.Containers[0]
		p := newPod(t, objs, podName, sts.Spec.Template.Spec, c)
		checkFlags(t, sts.Name, c.Args, serverFlags)
		if sts == bidders {
			// The bulk volume's file the config names (bidder.fx_file):
			// written by the operator's job.
			writeFile(t, p.local("/var/lib/rtbd/files/currency.json"), `{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":0.92}}}`)
		}
		cfg, err := effectiveConfig(t, p.env, p.args...)
		if err != nil {
			t.Fatalf("%s: the binary refuses the pod's configuration: %v", sts.Name, err)
		}
		// The check can fail: the binary refuses a variable it does not know.
		if _, err := effectiveConfig(t, append(slices.Clone(p.env), "RTBD_BIDDER_NO_SUCH_SETTING=1"), p.args...); err == nil {
			t.Fatal("rtbd config accepted RTBD_BIDDER_NO_SUCH_SETTING: the environment check proves nothing")
		}
		mode := setting(t, cfg, "mode")
		want := map[int32]string{}
		check := func(key string) {
			host, port := portOf(t, setting(t, cfg, key))
			if host != "0.0.0.0" && host != "" && host != "[::]" {
				t.Errorf("%s: %s is %s: not reachable from outside the pod", sts.Name, key, setting(t, cfg, key))
			}
			want[port] = key
		}
		check("admin.listen")
		_, adminPort := portOf(t, setting(t, cfg, "admin.listen"))
		switch mode {
		case "bidder":
			check("bidder.http_listen")
		case "catalog":
			check("catalog.grpc_listen")
			_, catalogGRPC = portOf(t, setting(t, cfg, "catalog.grpc_listen"))
			catalogData = strings.TrimPrefix(setting(t, cfg, "catalog.data"), p.root)
		}
		var have []int32
		for _, cp := range c.Ports {
			have = append(have, cp.ContainerPort)
			if _, ok := want[cp.ContainerPort]; !ok {
				t.Errorf("%s: containerPort %d (%s): the binary listens on no such port (%v)", sts.Name, cp.ContainerPort, cp.Name, want)
			}
		}
		for port, key := range want {
			if !slices.Contains(have, port) {
				t.Errorf("%s: %s (port %d) is no containerPort", sts.Name, key, port)
			}
		}
		// Probes: readiness /readyz and liveness /healthz on the admin
		// listener, routes the binary serves in this mode.
		for _, pr := range []struct {
			probe *corev1.Probe
			path  string
		}{{c.ReadinessProbe, "/readyz"}, {c.LivenessProbe, "/healthz"}} {
			if pr.probe == nil || pr.probe.HTTPGet == nil {
				t.Errorf("%s: no HTTP probe for %s", sts.Name, pr.path)
				continue
			}
			g := pr.probe.HTTPGet
			if g.Path != pr.path {
				t.Errorf("%s: probe on %s, want %s", sts.Name, g.Path, pr.path)
			}
			if !routes[mode][g.Path] {
				t.Errorf("%s: probe path %s is not an admin route of a %s (bidder/REFERENCE.md's route table)", sts.Name, g.Path, mode)
			}
			if port, ok := containerPort(c, g.Port); !ok || port != adminPort {
				t.Errorf("%s: probe %s on port %s, want the admin listener's %d", sts.Name, g.Path, g.Port.String(), adminPort)
			}
		}
		// Prometheus scrapes the admin listener.
		if ann := sts.Spec.Template.Annotations; ann["prometheus.io/port"] != strconv.Itoa(int(adminPort)) || !routes[mode][ann["prometheus.io/path"]] {
			t.Errorf("%s: scrape annotations %v: want the admin port %d and a route it serves", sts.Name, ann, adminPort)
		}
		grace := time.Duration(*sts.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
		var need time.Duration
		switch mode {
		case "bidder":
			// shutdown_delay, the drain, the admin listener (2s), the
			// spend flush (shutdown_timeout again).
			need = duration(t, cfg, "bidder.shutdown_delay") + 2*duration(t, cfg, "bidder.shutdown_timeout") + 2*time.Second
		case "catalog":
			need = duration(t, cfg, "catalog.graceful_timeout")
		}
		if grace < need {
			t.Errorf("%s: terminationGracePeriodSeconds %v < %v the shutdown may take", sts.Name, grace, need)
		}
		// The data on a volume of each pod's own.
		dataKey := map[string]string{"bidder": "bidder.data_dir", "catalog": "catalog.data"}[mode]
		dataDir := strings.TrimPrefix(setting(t, cfg, dataKey), p.root)
		if m := p.mountOf(dataDir); !strings.HasPrefix(p.mounts[m], "claim ") || !hasClaimTemplate(sts, strings.TrimPrefix(p.mounts[m], "claim ")) {
			t.Errorf("%s: %s %s is not on a volumeClaimTemplate's volume (%q)", sts.Name, dataKey, dataDir, p.mounts[m])
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: set requests.cpu (the HPA's base) and limits.memory", sts.Name)
		}
		// Secrets: every RTBD_*_FILE names a key of a mounted Secret.
		for _, e := range c.Env {
			if !strings.HasPrefix(e.Name, "RTBD_") || !strings.HasSuffix(e.Name, "_FILE") {
				continue
			}
			m := p.mountOf(e.Value)
			if !strings.HasPrefix(p.mounts[m], "secret ") {
				t.Errorf("%s: %s=%s is not in a Secret's volume", sts.Name, e.Name, e.Value)
				continue
			}
			if _, err := os.Stat(p.local(e.Value)); err != nil {
				t.Errorf("%s: %s=%s: the Secret has no such key", sts.Name, e.Name, e.Value)
			}
		}
		if mode == "bidder" {
			checkBidder(t, objs, sts, c, cfg, p, catalog, catalogGRPC)
		}
	}
	checkIngestJobs(t, objs, catalog, catalogData, ingestFlags)
	checkServices(t, objs)
}

func hasClaimTemplate(sts *appsv1.StatefulSet, name string) bool {
	for _, v := range sts.Spec.VolumeClaimTemplates {
		if v.Name == name {
			return true
		}
	}
	return false
}

func selects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkFlags: every flag of args is one the command's help lists.
func checkFlags(t *testing.T, who string, args []string, flags map[string]bool) {
	t.Helper()
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !flags[name] {
			t.Errorf("%s: flag %s: the binary's help lists no such flag", who, a)
		}
	}
}

// checkBidder: the bidders' own needs.
func checkBidder(t *testing.T, objs []object, sts *appsv1.StatefulSet, c corev1.Container, cfg map[string]any, p *pod, catalog *appsv1.StatefulSet, grpcPort int32) {
	t.Helper()
	var idFromName bool
	for _, e := range c.Env {
		if e.Name == "RTBD_SPEND_INSTANCE_ID" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			idFromName = true
		}
	}
	if !idFromName || setting(t, cfg, "spend.instance_id") != p.name {
		t.Errorf("bidder: spend.instance_id is %q, want the pod's name %q (RTBD_SPEND_INSTANCE_ID from metadata.name)", setting(t, cfg, "spend.instance_id"), p.name)
	}
	// The catalog target is the headless Service of the catalog nodes.
	target := setting(t, cfg, "catalog.target")
	host, ok := strings.CutPrefix(target, "dns:///")
	if !ok {
		t.Fatalf("bidder: catalog.target %q is not a dns:/// target", target)
	}
	h, port := portOf(t, host)
	svcName, rest, _ := strings.Cut(h, ".")
	svc := find[*corev1.Service](t, objs, "Service", svcName)
	ns := find[*corev1.Namespace](t, objs, "Namespace", "rtbd")
	if rest != ns.Name+".svc.cluster.local" || svc.Spec.ClusterIP != "None" || !selects(svc.Spec.Selector, catalog.Spec.Template.Labels) {
		t.Errorf("bidder: catalog.target %s: want the headless Service of the catalog nodes, %s.%s.svc.cluster.local (clusterIP None, selecting them)", target, svcName, ns.Name)
	}
	if port != grpcPort {
		t.Errorf("bidder: catalog.target port %d, the nodes listen on %d", port, grpcPort)
	}
	var svcPort bool
	for _, sp := range svc.Spec.Ports {
		svcPort = svcPort || sp.Port == port
	}
	if !svcPort {
		t.Errorf("bidder: the Service %s has no port %d", svcName, port)
	}
}

// checkIngestJobs: one CronJob per catalog node, on that node's volume,
// on its machine, with flags `rtbd ingest` has, writing the directory the
// node serves.
func checkIngestJobs(t *testing.T, objs []object, catalog *appsv1.StatefulSet, catalogData string, flags map[string]bool) {
	t.Helper()
	claims := map[string]bool{}
	for _, o := range objs {
		cj, ok := o.obj.(*batchv1.CronJob)
		if !ok {
			continue
		}
		spec := cj.Spec.JobTemplate.Spec.Template.Spec
		c := spec.Containers[0]
		if len(c.Args) == 0 || c.Args[0] != "ingest" {
			t.Errorf("%s: runs %v, not rtbd ingest", cj.Name, c.Args)
			continue
		}
		checkFlags(t, cj.Name, c.Args[1:], flags)
		p := newPod(t, objs, cj.Name, spec, c)
		var data, claim string
		for i, a := range c.Args {
			if a == "-data" && i+1 < len(c.Args) {
				data = c.Args[i+1]
			}
		}
		for _, v := range spec.Volumes {
			if v.PersistentVolumeClaim != nil && p.mounts[p.mountOf(data)] == "pvc "+v.PersistentVolumeClaim.ClaimName {
				claim = v.PersistentVolumeClaim.ClaimName
			}
		}
		if data != catalogData {
			t.Errorf("%s: -data %s, the nodes serve %s", cj.Name, data, catalogData)
		}
		// data-rtbd-catalog-N, and scheduled beside rtbd-catalog-N.
		var n int
		prefix := catalog.Spec.VolumeClaimTemplates[0].Name + "-" + catalog.Name + "-"
		if s, ok := strings.CutPrefix(claim, prefix); !ok {
			t.Errorf("%s: -data is on claim %q, not a catalog node's (%sN)", cj.Name, claim, prefix)
			continue
		} else if n, _ = strconv.Atoi(s); n >= int(*catalog.Spec.Replicas) {
			t.Errorf("%s: claim %s: the catalog has %d nodes", cj.Name, claim, *catalog.Spec.Replicas)
		}
		claims[claim] = true
		aff := spec.Affinity
		podName := fmt.Sprintf("%s-%d", catalog.Name, n)
		if aff == nil || aff.PodAffinity == nil || len(aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 ||
			aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels["statefulset.kubernetes.io/pod-name"] != podName {
			t.Errorf("%s: not required to run beside %s (a ReadWriteOnce volume mounts on one machine)", cj.Name, podName)
		}
	}
	if len(claims) != int(*catalog.Spec.Replicas) {
		t.Errorf("ingest jobs for %d catalog nodes, the catalog has %d", len(claims), *catalog.Spec.Replicas)
	}
}

// checkServices: every Service selects pods and targets their ports.
func checkServices(t *testing.T, objs []object) {
	t.Helper()
	for _, o := range objs {
		svc, ok := o.obj.(*corev1.Service)
		if !ok {
			continue
		}
		var c *corev1.Container
		for _, w := range objs {
			if sts, ok := w.obj.(*appsv1.StatefulSet); ok && selects(svc.Spec.Selector, sts.Spec.Template.Labels) {
				c = &sts.Spec.Template.Spec.Containers[0]
			}
		}
		if c == nil {
			t.Errorf("Service %s selects no pods", svc.Name)
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if _, ok := containerPort(*c, sp.TargetPort); !ok {
				t.Errorf("Service %s: targetPort %s is no port of its pods", svc.Name, sp.TargetPort.String())
			}
		}
	}
}
