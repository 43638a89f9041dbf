package aerospiketest

import (
	"strconv"
	"strings"
	"time"
)

// Fixed answers of the info protocol. Generations never change because the
// single node never changes its peers or partition ownership.
const (
	infoBuild           = "7.0.0.0"
	infoEdition         = "Aerospike Community Edition"
	infoVersion         = "Aerospike Community Edition build 7.0.0.0 (aerospiketest wire-protocol test server)"
	infoFeatures        = "batch-any;blob-bits;float;peers;pscans;replicas;truncate-namespace"
	infoGeneration      = "1"
	infoClusterKey      = "A3A0000000000001"
	infoPartitionsTotal = "4096"
)

// defaultInfoNames is answered to an info request without names (asinfo's default).
var defaultInfoNames = []string{"node", "build", "edition", "version", "features", "partition-generation", "services"}

// handleInfo answers an info-protocol request: newline-separated names, each
// answered as "name\tvalue\n" in request order (the v7 partition parser
// depends on that order).
func (s *Server) handleInfo(body []byte) []byte {
	var names []string
	for _, n := range strings.Split(string(body), "\n") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		names = defaultInfoNames
	}
	out := appendProtoHeader(make([]byte, 0, 1024), protoInfo)
	for _, name := range names {
		v := s.infoValue(name)
		// Values must not break the line format the client splits on.
		v = strings.NewReplacer("\t", " ", "\n", " ").Replace(v)
		out = append(out, name...)
		out = append(out, '\t')
		out = append(out, v...)
		out = append(out, '\n')
	}
	finishFrame(out, 0)
	return out
}

func (s *Server) infoValue(name string) string {
	ns := s.opts.Namespace
	peers := infoGeneration + "," + strconv.Itoa(s.port) + ",[]" // generation, default port, no peers
	switch name {
	case "node":
		return s.opts.NodeName
	case "build":
		return infoBuild
	case "edition":
		return infoEdition
	case "version":
		return infoVersion
	case "features":
		return infoFeatures
	case "partition-generation", "peers-generation", "rebalance-generation":
		return infoGeneration
	case "cluster-name":
		return s.opts.ClusterName
	case "cluster-stable":
		return infoClusterKey
	case "status":
		return "ok"
	case "partitions":
		return infoPartitionsTotal
	case "peers-clear-std", "peers-clear-alt", "peers-tls-std", "peers-tls-alt",
		"alumni-clear-std", "alumni-tls-std":
		return peers
	case "services", "services-alternate", "services-alumni":
		return "" // no other nodes
	case "service-clear-std", "service-clear-alt", "service":
		return s.Addr()
	case "service-tls-std", "service-tls-alt":
		return "" // no TLS
	case "replicas":
		// <ns>:<regime>,<replica count>,<bitmap>; regime 0 = AP namespace
		return ns + ":0,1," + s.bitmapB64 + ";"
	case "replicas-all":
		return ns + ":1," + s.bitmapB64 + ";"
	case "replicas-master":
		return ns + ":" + s.bitmapB64 + ";"
	case "namespaces":
		return ns
	case "rack-ids":
		return ns + ":0"
	case "statistics":
		return "objects=" + strconv.Itoa(s.Records()) + ";client_connections=" + strconv.Itoa(s.Connections()) +
			";cluster_size=1;cluster_key=" + infoClusterKey
	}
	switch {
	case strings.HasPrefix(name, "namespace/"):
		if strings.TrimPrefix(name, "namespace/") != ns {
			return "ERROR::namespace not found"
		}
		return "ns_cluster_size=1;replication-factor=1;objects=" + strconv.Itoa(s.Records()) +
			";default-ttl=" + strconv.Itoa(int(s.opts.DefaultTTL/time.Second)) +
			";max-ttl=" + strconv.Itoa(maxTTLSeconds) + ";nsup-period=" + s.nsupPeriod() +
			";allow-ttl-without-nsup=false;strong-consistency=false"
	case strings.HasPrefix(name, "truncate-namespace:"), strings.HasPrefix(name, "truncate:"):
		return s.infoTruncate(name)
	}
	return "" // unknown names get an empty value, as a real server does for most
}

// infoTruncate implements "truncate:namespace=<ns>;set=<set>[;lut=<ns since unix epoch>]"
// and "truncate-namespace:namespace=<ns>[;lut=...]". It deletes matching records
// whose last-update time (by Options.Now) is before lut (default: now).
func (s *Server) infoTruncate(cmd string) string {
	_, params, _ := strings.Cut(cmd, ":")
	var ns, set, lut string
	hasSet := strings.HasPrefix(cmd, "truncate:")
	for _, kv := range strings.Split(params, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "namespace":
			ns = v
		case "set":
			set = v
		case "lut":
			lut = v
		}
	}
	if ns != s.opts.Namespace {
		return "ERROR:20:namespace not found"
	}
	if hasSet && set == "" {
		return "ERROR:4:missing set"
	}
	before := s.opts.Now()
	if lut != "" {
		n, err := strconv.ParseInt(lut, 10, 64)
		if err != nil || n < 0 {
			return "ERROR:4:bad lut"
		}
		before = time.Unix(0, n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.records {
		if hasSet && k.set != set {
			continue
		}
		if r.lastUpdate.Before(before) || r.lastUpdate.Equal(before) {
			delete(s.records, k)
		}
	}
	return "ok"
}

// nsupPeriod is the namespace's nsup-period in seconds as info reports it.
func (s *Server) nsupPeriod() string {
	if s.opts.NsupPeriodZero {
		return "0"
	}
	return "120"
}
