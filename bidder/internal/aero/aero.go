// Package aero holds what rtbd's Aerospike stores share
// (bidder/spend/aerostore and bidder/user/aerostore): their Options, the
// client's Connect, the time one call may take, and the errors of writes
// a namespace refuses.
package aero

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"
)

// Defaults of Options.
const (
	DefaultNamespace = "rtbd"
	DefaultSpendSet  = "spend"
	DefaultFreqSet   = "freq"
	DefaultUserSet   = "users"
	DefaultNoticeSet = "notice"
	DefaultDayTTL    = 400 * 24 * time.Hour
	DefaultTimeout   = time.Second
)

// Sentinel errors.
var (
	// ErrInvalid is wrapped by errors for bad options.
	ErrInvalid = errors.New("aerostore: invalid")
	// ErrTTLRefused is wrapped when the namespace refuses writes carrying a
	// TTL (result code 22 FAIL_FORBIDDEN), which a server does while the
	// namespace's nsup-period is 0, its default.
	ErrTTLRefused = errors.New("aerostore: write with a TTL refused (FAIL_FORBIDDEN: is nsup-period 0?)")
)

// Options configures the stores. The zero value is usable.
type Options struct {
	// Namespace holding every set. Default "rtbd" (config aerospike.namespace).
	Namespace string
	// SpendSet, FreqSet, UserSet and NoticeSet name the sets. Defaults
	// "spend", "freq", "users", "notice".
	SpendSet, FreqSet, UserSet, NoticeSet string
	// DayTTL is the lifetime of a day's spend record. Default 400 days.
	DayTTL time.Duration
	// UserTTL is the lifetime of a user profile after its last write.
	// Default 0: the namespace's default-ttl.
	UserTTL time.Duration
	// Timeout bounds a call whose context has no deadline. Default 1s.
	Timeout time.Duration
	// MaxViewed and MaxGroups bound RecordView like pebblestore.Options. Defaults 50 and 20.
	MaxViewed, MaxGroups int
	// KeyPrefix is prepended to the key of every spend, freq, notice, user
	// and match record (and of the Check probes). Default "". Tests on a shared cluster use the
	// production set names with a per-run prefix, because every set a
	// namespace has seen counts against its 4,095 sets even once emptied.
	KeyPrefix string
}

// Defaults fills the zero fields of o with their defaults.
func (o *Options) Defaults() {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.SpendSet == "" {
		o.SpendSet = DefaultSpendSet
	}
	if o.FreqSet == "" {
		o.FreqSet = DefaultFreqSet
	}
	if o.UserSet == "" {
		o.UserSet = DefaultUserSet
	}
	if o.NoticeSet == "" {
		o.NoticeSet = DefaultNoticeSet
	}
	if o.DayTTL <= 0 {
		o.DayTTL = DefaultDayTTL
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxViewed <= 0 {
		o.MaxViewed = 50
	}
	if o.MaxGroups <= 0 {
		o.MaxGroups = 20
	}
}

// Connect opens a client to hosts, "host:port[,host:port...]" (port
// default 3000), and waits for the cluster to be reachable.
func Connect(hosts string, policy *as.ClientPolicy) (*as.Client, error) {
	var hs []*as.Host
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		name, port := h, 3000
		if i := strings.LastIndexByte(h, ':'); i > 0 && !strings.HasSuffix(h, "]") {
			p, err := strconv.Atoi(h[i+1:])
			if err != nil || p <= 0 || p > 65535 {
				return nil, fmt.Errorf("%w: aerospike host %q: bad port", ErrInvalid, h)
			}
			name, port = h[:i], p
		}
		hs = append(hs, as.NewHost(strings.Trim(name, "[]"), port))
	}
	if len(hs) == 0 {
		return nil, fmt.Errorf("%w: aerospike hosts: empty", ErrInvalid)
	}
	if policy == nil {
		policy = as.NewClientPolicy()
	}
	c, err := as.NewClientWithPolicyAndHost(policy, hs...)
	if err != nil {
		return nil, fmt.Errorf("aerostore: connect %s: %w", hosts, err)
	}
	return c, nil
}

// CallTimeout is the time one Aerospike call may take: what is left of
// ctx's deadline, or def when ctx has none. It fails with ctx's error when
// ctx is done or its deadline has passed.
func CallTimeout(ctx context.Context, def time.Duration) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if d, ok := ctx.Deadline(); ok {
		t := time.Until(d)
		if t <= 0 {
			return 0, context.DeadlineExceeded
		}
		return t, nil
	}
	return def, nil
}

// CheckErr is the error of a Check whose probe write to set was refused.
func CheckErr(ns, set string, aerr as.Error) error {
	if aerr.Matches(types.FAIL_FORBIDDEN) {
		return TTLRefused(ns, aerr)
	}
	return fmt.Errorf("aerostore: check namespace %q: %w", ns, WriteErr(ns, set, aerr))
}

// TTLRefused is the error of a write with a TTL that namespace ns refused
// with FAIL_FORBIDDEN.
func TTLRefused(ns string, aerr as.Error) error {
	return fmt.Errorf("%w: namespace %q refused a write with a TTL (FAIL_FORBIDDEN): set nsup-period (e.g. 120) for it in aerospike.conf, or allow-ttl-without-nsup true: %w", ErrTTLRefused, ns, aerr)
}

// WriteErr explains a refused write to set: FAIL_FORBIDDEN wraps
// ErrTTLRefused (nsup-period 0), PARAMETER_ERROR names its two causes
// for a well-formed write, the namespace's set limit and its max-ttl, and
// INVALID_NAMESPACE (the client's: the cluster's partition map has no such
// namespace) says which key to change. Other errors are returned as they
// are.
func WriteErr(ns, set string, aerr as.Error) error {
	switch {
	case aerr.Matches(types.FAIL_FORBIDDEN):
		return TTLRefused(ns, aerr)
	case aerr.Matches(types.PARAMETER_ERROR):
		return fmt.Errorf("%w (PARAMETER_ERROR on a write to set %q of namespace %q: does the namespace already hold its 4,095 sets without this one, or is the TTL above its max-ttl?)", aerr, set, ns)
	case aerr.Matches(types.INVALID_NAMESPACE):
		return fmt.Errorf("%w (the cluster has no namespace %q: add it to aerospike.conf, or set aerospike.namespace to one it has)", aerr, ns)
	}
	return aerr
}
