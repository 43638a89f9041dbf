// Package privacy decides whether one request may be personalised: a
// retargeting bid; reading, setting or storing rtbd's uid; recording a
// view; storing a match.
//
// Each regime is a policy of its own, read from the request (or the query
// of /event, /usersync and /match) and deciding alone:
//
//   - COPPA: regs.coppa=1, child-directed traffic.
//   - USP: the IAB US Privacy string (regs.us_privacy, regs.ext.us_privacy):
//     an opt-out of sale ("1-Y-") is a no.
//   - LMT: device.dnt=1 or device.lmt=1.
//   - GPP: the IAB GPP string with the sections regs.gpp_sid lists, parsed
//     with github.com/prebid/go-gpp: the US sections (6 as a US Privacy
//     string, 7 national, 8-12 the states) decide with Prebid's default
//     MSPA reading; section 2 makes GDPR apply with its TCF string.
//   - TCF: when GDPR applies (regs.gdpr, regs.ext.gdpr, or GPP section 2), a
//     TCF v2 consent string (user.consent, user.ext.consent, or GPP's) with
//     consent for purposes 1, 3 and 4 and, when a vendor id is set, for the
//     vendor without a publisher restriction; parsed with
//     github.com/prebid/go-gdpr.
//
// Signals holds every policy of one request; Signals.Decide applies them
// in a fixed order and returns one Decision: Allow, or the first policy's
// reason why not (nbr 505 on a bid). Every signal present must allow:
// where signals conflict, the most restrictive wins.
//
// The decision allocates nothing unless it parses a consent string (GDPR
// traffic) or a GPP string (regs.gpp with a regs.gpp_sid); the parsers'
// panics are caught and count as a string that does not parse.
package privacy
