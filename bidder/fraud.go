package bidder

import (
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/rtb"
)

// FraudChecker is the fraud block lists, checked in memory on the bid path
// (*fraud.Lists). Empty arguments are not checked.
type FraudChecker interface {
	Check(site, bundle, ip, ifa, uid string) (blocked bool, nbr rtb.NoBidReason)
}

// fraudCheck asks the fraud lists about the request's site domain, app
// bundle, device IP (v4, else v6), IFA and user.
func (b *Bidder) fraudCheck(req *openrtb2.BidRequest, uid string) (bool, rtb.NoBidReason) {
	var site, bundle, ip, ifa string
	if req.Site != nil {
		site = req.Site.Domain
	}
	if req.App != nil {
		bundle = req.App.Bundle
	}
	if d := req.Device; d != nil {
		ip, ifa = d.IP, d.IFA
		if ip == "" {
			ip = d.IPv6
		}
	}
	return b.opts.Fraud.Check(site, bundle, ip, ifa, uid)
}
