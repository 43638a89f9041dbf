// Package deploy is the home of rtbd's operator kit (README.md): the
// container image (image/), Kubernetes manifests (kubernetes/), the
// Grafana dashboard (grafana/), Prometheus alerts (prometheus/) and
// systemd units (systemd/). It is a Go module of its own so that its
// checks may import the Kubernetes API types, kustomize and Prometheus'
// PromQL parser without the product's module depending on them.
//
// Its tests hold the kit to the binary: they build rtbd from the parent
// directory (or take DEPLOY_BIN), read its flags from `rtbd -h`, validate
// every setting the manifests give through `rtbd config` (which rejects
// an unknown key or RTBD_* variable), read the routes from the route
// table the product's documentation test keeps true, scrape /metrics of
// a real catalog node and bidder and read an ingest run's textfile, and
// run the image built by `make image` (DEPLOY_IMAGE).
package deploy
