package bidder

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/configs"
)

// DefaultExchange is the exchange of POST /openrtb2/bid (no name in the
// path, config exchanges): it always exists.
const DefaultExchange = configs.DefaultExchange

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
	// notices.go). Default token.BillingBurl.
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

// UserIDOptions configure rtbd's own user id: its cookie, where /event and
// /match may take it from, and where /usersync and /match may redirect.
type UserIDOptions struct {
	// CookieName is the uid cookie's name. Default "rtbd_uid".
	CookieName string
	// CookieDomain is its Domain attribute; "": the host that set it.
	CookieDomain string
	// CookieMaxAge is its Max-Age. Default 8760h.
	CookieMaxAge time.Duration
	// TrustQueryUID accepts an unsigned uid= in the query of /event and
	// /match; otherwise only a uid signed with Keys (token.Keys.AppendUID)
	// is taken from the query.
	TrustQueryUID bool
	// SyncRedirectHosts are the hosts /usersync and /match redirect to:
	// "host[:port]" (https) or "http://host[:port]" (http or https). None:
	// every redirect is refused (400).
	SyncRedirectHosts []string
}

// MatchStore is the match table (/match): an exchange's own user id ->
// rtbd's uid. The user stores of rtbd implement it (*pebblestore.Store,
// *redisstore.Store, *aerostore.UserStore); a UserStore without it serves
// /match 503 and resolves no bid through it.
type MatchStore interface {
	// PutMatch stores key (user.MatchKey) -> uid.
	PutMatch(ctx context.Context, key, uid string) error
	// GetMatched resolves key to rtbd's uid, else to fallback, appends it
	// to dst and reads its profile into p, in one store round trip where
	// the store allows. It must honour ctx like UserStore.Get.
	GetMatched(ctx context.Context, key, fallback string, dst []byte, p *user.Profile) (uid []byte, found bool, err error)
}

// exchangeSet is the Bidder's exchanges: index 0 is DefaultExchange.
type exchangeSet struct {
	list  []Exchange
	index map[string]int // Name -> index in list
}

// newExchangeSet checks the exchanges of Options and fills the defaults.
func newExchangeSet(xs []Exchange) (exchangeSet, []error) {
	s := exchangeSet{list: []Exchange{{Name: DefaultExchange, UIDMacro: DefaultUIDMacro}}, index: map[string]int{DefaultExchange: 0}}
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
		if x.Name == DefaultExchange {
			s.list[0] = x
			continue
		}
		if _, dup := s.index[x.Name]; dup {
			errs = append(errs, fmt.Errorf("exchange %q listed twice", x.Name))
			continue
		}
		s.index[x.Name] = len(s.list)
		s.list = append(s.list, x)
	}
	return s, errs
}

func (s exchangeSet) names() []string {
	names := make([]string, len(s.list))
	for i, x := range s.list {
		names[i] = x.Name
	}
	return names
}

// redirectHosts is user.sync_redirect_hosts as a set: "https://host" for
// every entry, and "http://host" for the entries listed with http://.
type redirectHosts map[string]bool

func newRedirectHosts(hosts []string) (redirectHosts, []error) {
	set := redirectHosts{}
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
