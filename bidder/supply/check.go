package supply

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// Reason is why a chain is not authorized, or why a campaign's Policy
// refuses it: a small fixed set, the reason label of the bidder's
// supply-path metrics.
type Reason uint8

// Reasons.
const (
	OK                 Reason = iota
	NoChain                   // no source.schain nor source.ext.schain, or one without nodes
	Incomplete                // schain.complete is not 1 (Policy.CompleteOnly)
	TooManyHops               // more nodes than Policy.MaxHops
	BadNode                   // a node without asi or sid
	NoPublisherDomain         // neither site.domain / site.page nor app.publisher.domain / app.domain
	NoAdsTxt                  // no ads.txt (app-ads.txt) file for the publisher
	NotInAdsTxt               // the node's (asi, sid) is not in the publisher's file
	AdsTxtRelationship        // listed, but not DIRECT (first node) / RESELLER (later nodes)
	NoSellersJSON             // the node's asi has no sellers.json file
	NotInSellersJSON          // the node's sid is not in its asi's sellers.json
	WrongSellerType           // listed, but not PUBLISHER/BOTH (first node) / INTERMEDIARY/BOTH (later nodes)
	WrongExchange             // the last node's asi is not the exchange's domain
	NumReasons
)

var reasonNames = [NumReasons]string{"ok", "no_chain", "incomplete", "too_many_hops", "bad_node",
	"no_publisher_domain", "no_ads_txt", "not_in_ads_txt", "ads_txt_relationship", "no_sellers_json",
	"not_in_sellers_json", "seller_type", "wrong_exchange"}

// String is the reason's metric label (snake_case, fixed set).
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "other"
}

// Request is what Check needs of a bid request. Strings may alias the
// request: Check keeps none of them.
type Request struct {
	// Chain is source.schain, else source.ext.schain; nil: none.
	Chain *openrtb2.SupplyChain
	// App: the request is app traffic (app.publisher.domain, app.domain);
	// else site traffic (site.domain, else the host of site.page).
	App                        bool
	SiteDomain, SitePage       string
	PublisherDomain, AppDomain string
	// ExchangeDomain is the domain of the exchange the request came from
	// (exchanges.NAME.domain); "": not checked.
	ExchangeDomain string
}

// Verdict is what Check found of one request's chain.
type Verdict struct {
	// Reason is OK when the chain is authorized, else the first failure.
	Reason Reason
	// Node is the index of the node that failed, -1 when no node did.
	Node int
	// Hops is the number of nodes; Complete is schain.complete == 1.
	Hops     int
	Complete bool
	// Listed is, for the failing node, what the file says of it: the
	// ads.txt relationship (AdsTxtRelationship) or the sellers.json
	// type (WrongSellerType).
	Listed uint8
	// File is the ads.txt (app-ads.txt) used, as a path under supply.dir
	// ("ads/example.com.txt"); "" when none was found.
	File string
}

// Authorized reports whether every node passed.
func (v *Verdict) Authorized() bool { return v.Reason == OK }

// Policy is a campaign's supply setting (supply: in a campaigns file).
// The zero value allows every request.
type Policy struct {
	// CompleteOnly bids only on complete chains (schain.complete 1).
	CompleteOnly bool
	// MaxHops, when > 0, bids only on chains of at most that many nodes.
	MaxHops int
	// AuthorizedOnly bids only on authorized chains (see the package
	// documentation).
	AuthorizedOnly bool
}

// Active reports whether p checks anything.
func (p Policy) Active() bool { return p.CompleteOnly || p.MaxHops > 0 || p.AuthorizedOnly }

// Refuse returns OK when p allows a request of verdict v, else the reason
// (checked in this order: no chain, incomplete, too many hops, not
// authorized).
func (p Policy) Refuse(v *Verdict) Reason {
	if !p.Active() {
		return OK
	}
	if v.Hops == 0 && (p.CompleteOnly || p.AuthorizedOnly) {
		return NoChain
	}
	if p.CompleteOnly && !v.Complete {
		return Incomplete
	}
	if p.MaxHops > 0 && v.Hops > p.MaxHops {
		return TooManyHops
	}
	if p.AuthorizedOnly && v.Reason != OK {
		return v.Reason
	}
	return OK
}

// Scratch is the memory Check lower-cases names in: one per goroutine
// (the bidder keeps one per request state).
type Scratch struct {
	host, asi [253]byte
}

// Check computes the verdict of r's chain against the files of ix. It
// makes no allocation (but for the first sight of a site host whose own
// ads.txt is missing: see registrableCache). Nil-safe: a nil Index has no
// files.
func (ix *Index) Check(r *Request, sc *Scratch) Verdict {
	v := Verdict{Node: -1}
	if r.Chain == nil || len(r.Chain.Nodes) == 0 {
		v.Reason = NoChain
		return v
	}
	nodes := r.Chain.Nodes
	v.Hops, v.Complete = len(nodes), r.Chain.Complete == 1
	for i := range nodes {
		if nodes[i].ASI == "" || nodes[i].SID == "" {
			v.Reason, v.Node = BadNode, i
			return v
		}
	}
	ads, file, reason := ix.adsTxt(r, sc)
	if reason != OK {
		v.Reason = reason
		return v
	}
	v.File = file
	for i := range nodes {
		n := &nodes[i]
		asi, ok := lower(n.ASI, &sc.asi)
		if !ok {
			v.Reason, v.Node = NotInAdsTxt, i
			return v
		}
		wantRel, wantType := Reseller, SellerIntermediary
		if i == 0 {
			wantRel, wantType = Direct, SellerPublisher
		}
		rel := ads.Lookup(asi, n.SID)
		if rel == 0 {
			v.Reason, v.Node = NotInAdsTxt, i
			return v
		}
		if rel&wantRel == 0 {
			v.Reason, v.Node, v.Listed = AdsTxtRelationship, i, uint8(rel)
			return v
		}
		var sellers *Sellers
		if ix != nil {
			sellers = ix.sellers[asi]
		}
		if sellers == nil {
			v.Reason, v.Node = NoSellersJSON, i
			return v
		}
		t := sellers.Type(n.SID)
		if t == 0 {
			v.Reason, v.Node = NotInSellersJSON, i
			return v
		}
		if t&wantType == 0 {
			v.Reason, v.Node, v.Listed = WrongSellerType, i, uint8(t)
			return v
		}
	}
	if d := r.ExchangeDomain; d != "" {
		last := len(nodes) - 1
		if asi, _ := lower(nodes[last].ASI, &sc.asi); asi != d {
			v.Reason, v.Node = WrongExchange, last
			return v
		}
	}
	return v
}

// adsTxt finds the publisher's file: a site's host's, else its registrable
// domain's; an app's publisher domain's, else its app domain's.
func (ix *Index) adsTxt(r *Request, sc *Scratch) (*AdsTxt, string, Reason) {
	if r.App {
		any := false
		for _, d := range [2]string{r.PublisherDomain, r.AppDomain} {
			h, ok := lower(trimDot(d), &sc.host)
			if !ok || h == "" {
				continue
			}
			any = true
			if f := ix.appAds(h); f != nil {
				return f, f.name, OK
			}
		}
		if !any {
			return nil, "", NoPublisherDomain
		}
		return nil, "", NoAdsTxt
	}
	h := r.SiteDomain
	if h == "" {
		h = hostOf(r.SitePage)
	}
	h, ok := lower(trimDot(h), &sc.host)
	if !ok || h == "" {
		return nil, "", NoPublisherDomain
	}
	if ix == nil {
		return nil, "", NoAdsTxt
	}
	if f := ix.ads[h]; f != nil {
		return f, f.name, OK
	}
	if reg := ix.reg.of(h); reg != "" && reg != h {
		if f := ix.ads[reg]; f != nil {
			return f, f.name, OK
		}
	}
	return nil, "", NoAdsTxt
}

func (ix *Index) appAds(h string) *AdsTxt {
	if ix == nil {
		return nil
	}
	return ix.appAdsTxt[h]
}

// lower returns s in lower case: s itself when it has no upper case, else
// a string over buf (valid until buf's next use). ok is false when s is
// longer than buf (no domain name is).
func lower(s string, buf *[253]byte) (string, bool) {
	upper := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			upper = true
			break
		}
	}
	if !upper {
		return s, true
	}
	if len(s) > len(buf) {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return unsafe.String(&buf[0], len(s)), true
}

func trimDot(s string) string {
	for len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// hostOf returns the host of a URL such as https://user@www.example.com:443/a
// (no scheme, user info, port or path), or of a bare host[/path].
func hostOf(u string) string {
	end := strings.IndexAny(u, "/?#")
	if end < 0 {
		end = len(u)
	}
	if i := strings.Index(u, "://"); i >= 0 && i < end {
		u = u[i+3:]
	} else if strings.HasPrefix(u, "//") {
		u = u[2:]
	}
	if i := strings.IndexAny(u, "/?#"); i >= 0 {
		u = u[:i]
	}
	if i := strings.LastIndexByte(u, '@'); i >= 0 {
		u = u[i+1:]
	}
	if i := strings.LastIndexByte(u, ':'); i >= 0 && strings.IndexByte(u[i:], ']') < 0 {
		u = u[:i]
	}
	return u
}

// Explain says in words why v refuses (for /admin/debug/bid): which node,
// which file, what it lists. It allocates: debug runs only.
func (v *Verdict) Explain(r *Request, reason Reason) string {
	node := func() string {
		if v.Node < 0 || r.Chain == nil || v.Node >= len(r.Chain.Nodes) {
			return ""
		}
		n := &r.Chain.Nodes[v.Node]
		return fmt.Sprintf("node %d (asi %q, sid %q)", v.Node, n.ASI, n.SID)
	}
	switch reason {
	case OK:
		return "supply path ok"
	case NoChain:
		return "no supply chain (source.schain, source.ext.schain)"
	case Incomplete:
		return "supply chain not complete (complete != 1)"
	case TooManyHops:
		return fmt.Sprintf("supply chain has %d nodes, more than the campaign's max_hops", v.Hops)
	case BadNode:
		return node() + ": asi or sid missing"
	case NoPublisherDomain:
		return "no site.domain, site.page, app.publisher.domain or app.domain to find an ads.txt for"
	case NoAdsTxt:
		if r.App {
			return fmt.Sprintf("no app-ads.txt for app.publisher.domain %q nor app.domain %q", r.PublisherDomain, r.AppDomain)
		}
		return fmt.Sprintf("no ads.txt for the site's host (site.domain %q, site.page %q) nor its registrable domain", r.SiteDomain, r.SitePage)
	case NotInAdsTxt:
		return fmt.Sprintf("%s: not in %s", node(), v.File)
	case AdsTxtRelationship:
		want := "RESELLER"
		if v.Node == 0 {
			want = "DIRECT"
		}
		return fmt.Sprintf("%s: %s lists it as %s, want %s", node(), v.File, Relationship(v.Listed), want)
	case NoSellersJSON:
		return node() + ": no sellers.json for its asi"
	case NotInSellersJSON:
		return node() + ": sid not in its asi's sellers.json"
	case WrongSellerType:
		want := "INTERMEDIARY or BOTH"
		if v.Node == 0 {
			want = "PUBLISHER or BOTH"
		}
		return fmt.Sprintf("%s: its sellers.json lists it as %s, want %s", node(), SellerType(v.Listed), want)
	case WrongExchange:
		return fmt.Sprintf("%s: the last node's asi is not the exchange's domain %q", node(), r.ExchangeDomain)
	}
	return reason.String()
}
