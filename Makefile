# rtbd: the two commands a new user needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/rtbd
DEMO    ?= demo
GOBIN   := $(shell $(GO) env GOPATH)/bin
# Packages with concurrency worth the race detector: all but those that
# start no goroutine and share nothing (the codecs: rtb decodes on one
# goroutine, catalogpb is generated; money arithmetic, the auction
# simulation, small pure helpers) and the root package.
RACE_PKGS = $(shell $(GO) list ./... | grep -v -e '/rtb$$' -e '/catalogpb$$' -e 'rtbd/rtbd$$' \
	-e '/money$$' -e '/moneytest$$' -e '/auctionsim$$' -e '/decgen$$' -e '/dsa$$' -e '/feedgen$$' \
	-e '/ascii$$' -e '/demoimg$$' -e '/cliflag$$' -e '/cputime$$' -e '/splitmix$$')
# Test binaries are linked without DWARF (-w): no test reads it, and it is
# half of each link's CPU (stack traces and profiles use the symbol table).
# Four packages at a time on two cores: much of a package's test time
# waits (outages, timeouts, child processes), and the waits overlap.
# -vet=off: make test has run the whole of go vet first (target vet, and
# deploy's before its tests); go test's own vet subset would repeat it.
TESTFLAGS ?= -count=1 -ldflags=-w -p 4 -vet=off
# The race pass runs -short: the tests that say "SKIPPED in -short"
# (connection floods, million-line loads, multi-process load scenarios)
# and the command-line auction simulation (one goroutine) run once, in
# the plain pass, whose assertions they are.
RACE_FLAGS ?= -race -short -skip '^TestAuctionCommand$$'

.PHONY: image test-deploy bench-supply bench-fleet bench-shading-fleet bench-soak bench-ingest build run run-catalog test test-race deps generate proto bench bench-catalog bench-generator bench-rss bench-conns bench-recommend bench-recommend-scale fuzz vet clean

build:
	$(GO) build -o $(BIN) .

# Build, make the demo once (skipped when $(DEMO)/ exists: catalog, users,
# campaigns, rtbd.yaml), and serve it with the bidder on its embedded
# defaults (local index, embedded user store).
run: build
	@if [ ! -e $(DEMO)/rtbd.yaml ]; then ./$(BIN) gen -demo -hint=false -out $(DEMO); fi
	@echo
	@echo "bidder starting on 127.0.0.1:8080 (admin 127.0.0.1:9091). In another terminal:"
	@echo "  curl -s -H 'Content-Type: application/json' --data @$(DEMO)/sample-request.json http://127.0.0.1:8080/openrtb2/bid"
	@echo
	@./$(BIN) -config $(DEMO)/rtbd.yaml

# A catalog node over the demo index (gRPC on 127.0.0.1:9090, admin 127.0.0.1:9092).
run-catalog: build
	@if [ ! -e $(DEMO)/rtbd.yaml ]; then ./$(BIN) gen -demo -hint=false -out $(DEMO); fi
	@./$(BIN) -config $(DEMO)/rtbd.yaml -mode=catalog

# Every test, on a fresh Debian machine with Go: installs what tests need.
test: deps vet
	$(GO) test $(TESTFLAGS) ./...
	$(GO) test $(RACE_FLAGS) $(TESTFLAGS) $(RACE_PKGS)
	$(MAKE) test-deploy

# The operator kit's checks (deploy/, a Go module of its own so that the
# product's gains no Kubernetes dependency): the image built and run, the
# manifests decoded into the Kubernetes types and built with kustomize,
# the dashboard's and alerts' PromQL against the metrics of real
# processes, promtool check rules. The tests check the image's binary.
test-deploy: image
	@command -v promtool >/dev/null 2>&1 || { \
		echo "installing prometheus (promtool)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus) >/dev/null; }
	cd deploy && $(GO) vet ./... && DEPLOY_IMAGE=$(IMAGE) DEPLOY_BIN=$(CURDIR)/$(IMAGE_CTX)/rtbd $(GO) test $(TESTFLAGS) ./...

# The container image: a FROM scratch image (deploy/image/Containerfile.scratch,
# the runtime stage of deploy/image/Dockerfile) around a static rtbd built
# here (CGO_ENABLED=0: see deploy/README.md for what that gives up), the
# host's CA certificates and an unprivileged user, built with podman
# (installed from Debian when absent). No base image is pulled.
IMAGE     ?= localhost/rtbd:dev
IMAGE_CTX := bin/image
image:
	@command -v podman >/dev/null 2>&1 || { \
		echo "installing podman"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman) >/dev/null; }
	@test -s /etc/ssl/certs/ca-certificates.crt || { \
		echo "installing ca-certificates"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ca-certificates) >/dev/null; }
	rm -rf $(IMAGE_CTX) && mkdir -p $(IMAGE_CTX)/rootfs/etc/ssl/certs $(IMAGE_CTX)/rootfs/etc/rtbd $(IMAGE_CTX)/rootfs/data
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(IMAGE_CTX)/rtbd .
	cp /etc/ssl/certs/ca-certificates.crt $(IMAGE_CTX)/rootfs/etc/ssl/certs/
	cp deploy/image/passwd deploy/image/group $(IMAGE_CTX)/rootfs/etc/
	cp deploy/image/rtbd.yaml $(IMAGE_CTX)/rootfs/etc/rtbd/
	podman build -q -f deploy/image/Containerfile.scratch -t $(IMAGE) $(IMAGE_CTX)
	@podman image inspect --format '{{.Size}}' $(IMAGE) | awk '{ printf "image $(IMAGE): %.1f MiB\n", $$1 / 1048576 }'

vet:
	$(GO) vet ./...
	cd deploy && $(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null | grep -v '\.pb\.go$$')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Servers the tests start themselves (never as services): redis-server,
# and PostgreSQL (initdb and postgres, which Debian keeps in
# /usr/lib/postgresql/N/bin, off PATH).
deps:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null; }
	@{ command -v pg_config >/dev/null 2>&1 && test -x "$$(pg_config --bindir)/initdb"; } || \
		ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
		echo "installing postgresql"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null; }

# The OpenRTB bid request decoder (rtb/jsondec_gen.go, committed), generated
# from the openrtb2 types in go.mod; rtb/internal/decgen's test fails when stale.
generate:
	cd rtb && $(GO) generate .

# Regenerate the gRPC code (committed) from catalog/catalogpb/catalog.proto.
proto:
	@command -v protoc >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq protobuf-compiler; }
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
	cd catalog/catalogpb && PATH="$(GOBIN):$$PATH" $(GO) generate .

# Catalog benchmarks, each with its baseline in the same run (medians over
# -count 10 with benchstat: go install golang.org/x/perf/cmd/benchstat@latest).
bench-catalog:
	$(GO) test -run '^$$' -bench . -benchmem -count 10 ./catalog/ ./catalog/remote/ | tee /tmp/rtbd-bench-catalog.txt

# Supply-path and DSA checks: the load of 100,000 sellers and 1,000,000
# ads.txt lines (time, heap held), one verdict beside the bare map lookups
# it makes, and one bid with a campaign that checks the supply path and
# writes ext.dsa beside the same bid without (medians with benchstat).
bench-supply:
	$(GO) test -count=1 -run '^TestLoadLarge$$' -v ./bidder/supply/ | grep -E 'load of|^(ok|FAIL)'
	$(GO) test -run '^$$' -bench '^Benchmark(Check|MapLookup)$$' -benchmem -count 10 ./bidder/supply/ | tee /tmp/rtbd-bench-supply.txt
	$(GO) test -run '^$$' -bench '^BenchmarkBidSupplyDSA$$' -benchmem -count 10 ./bidder/ | tee -a /tmp/rtbd-bench-supply.txt

# The bench harness's own cost: generator cores at 20,000 req/s beside a
# bare fasthttp client loop in the same run (5 runs of 2 s).
bench-generator:
	$(GO) test -count=1 -run '^$$' -bench '^BenchmarkGeneratorCost$$' -benchtime 5x ./bench/

# A bidder process under connections (bidder.max_conns at its default,
# 10,000): memory per idle connection, then 20,000 connection attempts
# (10,000 held, the rest 503 and closed) while the held ones bid. Once with
# rtbd's settings, once with fasthttp's default idle buffers for comparison.
# Needs ulimit -n of at least 10,100.
bench-conns:
	$(GO) test -count=1 -timeout 10m -run '^$$' -bench '^BenchmarkConns$$' -benchtime 1x ./bidder/ | grep '^CONNS'
	BIDDER_BENCH_REDUCE_MEMORY=0 RTBD_BENCH_CONN_ATTEMPTS=10000 $(GO) test -count=1 -timeout 10m -run '^$$' -bench '^BenchmarkConns$$' -benchtime 1x ./bidder/ | grep '^CONNS'

# Catalog node RSS over 1M and 10M products (builds them in /tmp once).
bench-rss:
	RTBD_RSS_PRODUCTS=1000000 RTBD_RSS_DIR=/tmp/rtbd-rss-1m $(GO) test -count=1 -timeout 60m -run '^$$' -bench '^BenchmarkNodeRSS$$' -benchtime 1x ./catalog/node | grep '^RSS'
	RTBD_RSS_PRODUCTS=10000000 RTBD_RSS_DIR=/tmp/rtbd-rss-10m $(GO) test -count=1 -timeout 60m -run '^$$' -bench '^BenchmarkNodeRSS$$' -benchtime 1x ./catalog/node | grep '^RSS'

# The standard side-by-side comparison (a few minutes on 2 cores): store level
# (the same Zipf 3/15/30-product request stream at the same rate to the local
# index in-process, a gRPC catalog node and redis-server), then bidder level
# (a bidder with the local index vs one with 2 catalog nodes; bids + win
# notices + pixel events). Writes bench/results/latest.{txt,json,html}.
# Compare two runs: ./bin/rtbd bench compare OLD.json bench/results/latest.json
# TASKSET pins a bench run and the processes it starts from outside the
# harness, e.g. make bench TASKSET="taskset -c 1".
TASKSET ?=
BENCH_FLAGS ?=
bench: build deps
	$(TASKSET) ./$(BIN) bench all -out bench/results $(BENCH_FLAGS)

# The fleet of bidder/e2e's TestFleetEndToEnd (redis-server, PostgreSQL, two
# catalog nodes, three bidders) under a steady load for FLEET_BENCH (60s),
# the bidders restarted one after another; printed every second, no asserts.
FLEET_BENCH ?= 60s
bench-fleet: deps
	FLEET_BENCH=$(FLEET_BENCH) $(TASKSET) $(GO) test -count=1 -timeout 30m -v -run '^TestFleetBench$$' ./bidder/e2e/

# Bid shading's fleet sync (bidder/shading BenchmarkFleetSync) against a
# redis-server, a bidder holding 512 and 4,096 segments, every segment with
# new counts (active) or none (idle): time, keys, round trips and
# redis-server's CPU (from /proc) per sync; 60 syncs, one 5 min slot of
# 5 s intervals.
bench-shading-fleet: deps
	$(GO) test -count=1 -run '^$$' -bench '^BenchmarkFleetSync$$' -benchtime 60x ./bidder/shading/ | tee /tmp/rtbd-bench-shading-fleet.txt

# Fault-injection soak (bench/README.md, "rtbd bench soak"): two bidders sharing redis-server
# (AOF, appendfsync always) and two catalog nodes under bids, notices,
# events and clicks for SOAK_DURATION (10m), every fault twice. Writes
# bench/results/soak/latest.*.
SOAK_DURATION ?= 10m
bench-soak: build deps
	$(TASKSET) ./$(BIN) bench soak -duration $(SOAK_DURATION) -out bench/results/soak

# Ingest benchmark: a 10M-product CSV (generated once, ~3.9 GB, reused),
# bulk path vs -method=batch in one run (child processes: rows/s, MB/s, CPU,
# peak RSS, ratio), then a 100k-row -delta. ~10-15 min; needs ~12 GB in /tmp.
# Similar-product lists at scale: 1M products, 10M views (1.25M users, planted
# clusters), one full ingest with -views; time and peak RSS (GNU time).
RECO_DIR ?= /tmp/rtbd-bench-recommend
bench-recommend-scale:
	$(GO) build -o $(RECO_DIR)/rtbd .
	rm -rf $(RECO_DIR)/data $(RECO_DIR)/views
	$(RECO_DIR)/rtbd gen -out $(RECO_DIR)/feed.csv -products 1000000 -groups 8 -views $(RECO_DIR)/views -view-users 1250000
	/usr/bin/time -f 'BENCH ingest with views: %e s elapsed, %M KiB peak RSS' $(RECO_DIR)/rtbd ingest -data $(RECO_DIR)/data -views $(RECO_DIR)/views -progress none $(RECO_DIR)/feed.csv

# Offline evaluation of the similar lists on planted-cluster views (20,000
# products, 40,000 users): hit rate and recall at 10 against the most popular
# products of the group, coverage.
bench-recommend:
	$(GO) build -o $(RECO_DIR)/rtbd .
	rm -rf $(RECO_DIR)/small && mkdir -p $(RECO_DIR)/small
	$(RECO_DIR)/rtbd gen -out $(RECO_DIR)/small/feed.csv -products 20000 -groups 4 -views $(RECO_DIR)/small/views -view-users 40000
	$(RECO_DIR)/rtbd ingest -data $(RECO_DIR)/small/data -views $(RECO_DIR)/small/views -progress none $(RECO_DIR)/small/feed.csv
	$(RECO_DIR)/rtbd bench recommend -views $(RECO_DIR)/small/views -data $(RECO_DIR)/small/data -k 10

bench-ingest:
	RTBD_BENCH_INGEST_PRODUCTS=10000000 RTBD_BENCH_INGEST_DIR=/tmp/rtbd-bench-ingest $(GO) test -count=1 -timeout 4h -run '^$$' -bench '^BenchmarkIngest$$' -benchtime 1x ./ingest/ | grep -E '^(BENCH|  )'

# Short fuzzing of every parser of outside input. A target fails only when it
# writes a reproducer to testdata/fuzz/: go1.26's fuzz coordinator can end a
# clean run with a bare "context deadline exceeded" at -fuzztime's boundary
# (golang/go#75804, fixed in go1.27); that is reported as a flake and the
# run goes on. Every target runs; the exit status says whether one failed.
FUZZTIME ?= 20s
fuzz: # every fuzz target of every package, FUZZTIME each
	@failed=""; flaked=""; \
	for pkg in $$($(GO) list ./...); do \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; \
			before=$$(ls $$dir/testdata/fuzz/$$f 2>/dev/null | wc -l); \
			if ! $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; then \
				after=$$(ls $$dir/testdata/fuzz/$$f 2>/dev/null | wc -l); \
				if [ "$$after" -gt "$$before" ]; then failed="$$failed $$pkg.$$f"; \
				else flaked="$$flaked $$pkg.$$f"; echo "   (no reproducer written: the go1.26 fuzz deadline race, golang/go#75804)"; fi; \
			fi; \
		done; \
	done; \
	[ -z "$$flaked" ] || echo "flaked (no reproducer):$$flaked"; \
	if [ -n "$$failed" ]; then echo "FAILED (reproducers in testdata/fuzz):$$failed"; exit 1; fi; \
	echo "fuzz: every target passed"

clean:
	rm -rf bin

.PHONY: bench-scale bench-scale-clean bench-near

# The talk's scale (bench/README.md, "rtbd bench scale"): the largest catalog
# whose ingest fits the free disk of /tmp, 20M to 100M products (or
# RTBD_BENCH_SCALE_PRODUCTS), generated and piped into the bulk ingest, then
# one catalog node (RSS) and 15-id lookups, uniform and Zipf, through the node
# and through a bidder on it. The index stays in SCALE_DATA for reruns (the
# ingest is skipped); `make bench-scale-clean` removes it. 100M: ~40 GB of
# disk while it ingests, ~20 GB after; ~15-30 min on 2 vCPUs.
SCALE_DATA ?= /tmp/rtbd-scale
bench-scale: build
	$(TASKSET) ./$(BIN) bench scale -data $(SCALE_DATA) -out bench/results/scale

bench-scale-clean:
	rm -rf $(SCALE_DATA)

# Remote vs local with the near cache (NEAR_CACHE_BYTES on the remote bidder
# and on the store level's grpc-near client, when catalog/remote has one):
# bidder level with 100,000 Zipf and 100,000 uniform users (2,000 bids/s,
# then each topology's highest rate holding p99 <= 5 ms: the throughput
# ratio), then the store level (local, grpc, grpc-near, redis) at one
# offered rate.
NEAR_CACHE_BYTES ?= 256MiB
NEAR_FLAGS ?=
bench-near: build deps
	$(TASKSET) ./$(BIN) bench near -near-cache $(NEAR_CACHE_BYTES) -out bench/results $(NEAR_FLAGS)

# The bidder with its local index beside the bidder on a remote catalog
# node, under wrk (installed from Debian when absent): requests/s, p50/p99
# and server CPU per request for the demo's sample request over its 1,000
# users, alternated for ROUNDS (figures: bench/results/2026-12-05-remote-vs-local.md).
.PHONY: bench-wrk
bench-wrk: build
	@command -v wrk >/dev/null 2>&1 || { echo "installing wrk"; apt-get install -y -qq wrk >/dev/null; }
	@if [ ! -e $(DEMO)/rtbd.yaml ]; then ./$(BIN) gen -demo -hint=false -out $(DEMO); fi
	DEMO=$(DEMO) bench/wrk/remote-local.sh ./$(BIN)

# Server CPU per bid of this build (B) against another rtbd binary (A, e.g.
# one built from the previous release), side by side in one run under wrk:
#   make bench-ab BASE=/path/to/old/rtbd
.PHONY: bench-ab
bench-ab: build
	@command -v wrk >/dev/null 2>&1 || { echo "installing wrk"; apt-get install -y -qq wrk >/dev/null; }
	@test -n "$(BASE)" || { echo "make bench-ab BASE=/path/to/other/rtbd"; exit 2; }
	bench/wrk/ab.sh $(BASE) ./$(BIN)

# Server CPU per bid of viewed-only users (recommendations from the similar
# lists) beside users with Recommended in their profile, alternated on one
# bidder, then on a remote catalog node (p99 and CPU per request); the setup
# is made once in RECO_CPU_WORK (bench/README.md, "wrk: recommendations from
# the profile vs from the similar lists").
RECO_CPU_WORK ?= /tmp/rtbd-reco-cpu
.PHONY: bench-recommend-cpu
bench-recommend-cpu: build
	@command -v wrk >/dev/null 2>&1 || { echo "installing wrk"; apt-get install -y -qq wrk >/dev/null; }
	WORK=$(RECO_CPU_WORK) bench/wrk/recommend-cpu.sh ./$(BIN)

# The records' file sink on and off, under wrk, alternated (bench/wrk/records.sh):
# server CPU per bid request with the Parquet files over without them.
.PHONY: bench-records
bench-records: build
	@command -v wrk >/dev/null 2>&1 || { echo "installing wrk"; apt-get install -y -qq wrk >/dev/null; }
	@if [ ! -e $(DEMO)/rtbd.yaml ]; then ./$(BIN) gen -demo -hint=false -out $(DEMO); fi
	DEMO=$(DEMO) bench/wrk/records.sh ./$(BIN)

# The records' acceptance runs at full size (bidder/e2e/records_test.go):
# 20,000 bids, a 30 s Kafka cut; RTBD_KAFKA_BROKERS=host:port runs the
# counts and kill -9 tests against a real cluster instead of kfake.
.PHONY: test-records-full
test-records-full:
	RTBD_RECORDS_BIDS=20000 RTBD_RECORDS_CUT=30s $(GO) test -count=1 -timeout 20m -v -run '^TestRecords' ./bidder/e2e/
