// Package exchange is the bidder's exchanges (config exchanges.NAME):
// their settings, the set a Bidder serves, the hosts /usersync and /match
// may redirect to, and the counters of the per-exchange source check.
package exchange

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/configs"
)

// Default is the exchange of POST /openrtb2/bid (no name in the
// path, config exchanges): it always exists.
const Default = configs.DefaultExchange

// DefaultUIDMacro is the uid macro of an exchange that sets none.
const DefaultUIDMacro = configs.DefaultUIDMacro

// Exchange is one exchange's settings (config exchanges.NAME).
type Exchange struct {
	// Name is 1-32 lower-case letters, digits, '_' or '-': the path
	// PathBid + "/" + Name, the x= of /match and the exchange label of
	// rtbd_bidder_requests_total and rtbd_bidder_bids_total.
	Name string
	// UIDMacro is the text /usersync replaces with rtbd's uid in a
	// redirect URL. Default DefaultUIDMacro.
	UIDMacro string
	// Billing is which notices of the exchange's bids charge (see
	// the bidder's notices). Default token.BillingBurl.
	Billing token.Billing
	// PriceEncryptionKey and PriceIntegrityKey (raw bytes) decrypt the
	// exchange's encrypted clearing prices; nil: Options'.
	PriceEncryptionKey, PriceIntegrityKey []byte
	// Domain is the exchange's advertising system domain: the last node
	// of its supply chains must be it (campaigns with
	// supply.authorized_only); "": not checked.
	Domain string
	// AllowCIDRs are the source ranges of the exchange's bid requests and
	// of the server-to-server notices (/win, /bill, /loss) of its tokens;
	// a request from outside is 403 before any work (see sources.go).
	// None: any source.
	AllowCIDRs []netip.Prefix
	// LossNotices: the exchange fires the lurl of lost bids; without (the
	// default) a first-price bid with no win within NoticeWait counts as
	// lost for bid shading.
	LossNotices bool
	// NoticeWait is how long after a bid its win notice may still arrive.
	// Default shading.DefaultNoticeWait (60s).
	NoticeWait time.Duration
}

// Set is a Bidder's exchanges: index 0 is Default.
type Set struct {
	List  []Exchange
	Index map[string]int // Name -> index in List
}

// NewSet checks the exchanges of a Bidder's options and fills the
// defaults.
func NewSet(xs []Exchange) (Set, []error) {
	s := Set{List: []Exchange{{Name: Default, UIDMacro: DefaultUIDMacro}}, Index: map[string]int{Default: 0}}
	var errs []error
	for _, x := range xs {
		if x.UIDMacro == "" {
			x.UIDMacro = DefaultUIDMacro
		}
		if (len(x.PriceEncryptionKey) == 0) != (len(x.PriceIntegrityKey) == 0) {
			errs = append(errs, fmt.Errorf("exchange %q: PriceEncryptionKey and PriceIntegrityKey go together", x.Name))
			continue
		}
		if x.Billing.String() == "unknown" {
			errs = append(errs, fmt.Errorf("exchange %q: billing %d", x.Name, x.Billing))
			continue
		}
		if !configs.ValidExchangeName(x.Name) {
			errs = append(errs, fmt.Errorf("exchange %q: a name is 1-32 lower-case letters, digits, '_' or '-'", x.Name))
			continue
		}
		if x.Name == Default {
			s.List[0] = x
			continue
		}
		if _, dup := s.Index[x.Name]; dup {
			errs = append(errs, fmt.Errorf("exchange %q listed twice", x.Name))
			continue
		}
		s.Index[x.Name] = len(s.List)
		s.List = append(s.List, x)
	}
	return s, errs
}

// Names returns the exchanges' names, by index.
func (s Set) Names() []string {
	names := make([]string, len(s.List))
	for i, x := range s.List {
		names[i] = x.Name
	}
	return names
}

// RedirectHosts is user.sync_redirect_hosts as a set: "https://host" for
// every entry, and "http://host" for the entries listed with http://.
type RedirectHosts map[string]bool

// NewRedirectHosts checks hosts and makes their set.
func NewRedirectHosts(hosts []string) (RedirectHosts, []error) {
	set := RedirectHosts{}
	var errs []error
	for _, h := range hosts {
		if msg := configs.CheckRedirectHost(h); msg != "" {
			errs = append(errs, fmt.Errorf("sync redirect host %q: %s", h, msg))
			continue
		}
		host, plain := strings.CutPrefix(h, "http://")
		set["https://"+host] = true
		if plain {
			set["http://"+host] = true
		}
	}
	return set, errs
}
