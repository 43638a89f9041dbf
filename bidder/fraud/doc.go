// Package fraud holds the ad-fraud block lists that third parties keep in
// Redis, synced into memory so that the bid path checks them with no remote
// round trip and no allocation.
//
// # Redis keys (Prefix default "rtbd:fraud:")
//
//	domains      SET of site domains; an entry blocks the domain and every subdomain
//	bundles      SET of app bundles / store ids (exact, case-insensitive)
//	ips          SET of IPv4/IPv6 addresses and CIDR prefixes
//	ifas         SET of device advertising ids (device.ifa, case-insensitive)
//	uids         SET of user ids (user.id / buyeruid, exact)
//	datacenters  SET of data-centre / cloud / proxy IPs and CIDRs
//	version      integer that writers INCR after changing any set
//
// Domain entries are normalised (lower case, surrounding spaces, a leading
// "*." or "." and a trailing "." removed); entries that do not parse (a bad
// IP or CIDR, an empty or over-long value, a control character) are skipped
// and counted in rtbd_fraud_rejected_entries_total{list}.
//
// # Sync
//
// Start loads every set (SSCAN, never SMEMBERS, so a big set does not block
// Redis), builds an immutable Snapshot and swaps it in atomically. A loop
// then reads the version key every CheckInterval and reloads when it
// changed, and reloads anyway every ReloadInterval (in case a writer forgot
// to INCR). The version is read before a load, so a change during the load
// triggers another. When Redis is down, slow or restarted, the last
// snapshot stays in use, errors are counted (rtbd_fraud_syncs_total{result=
// "error"}) and the loop tries again at the next tick. A load that finds
// Redis empty (no version key and no entries at all) while the snapshot in
// use has entries is refused: that is what a Redis restarted without its
// data looks like, and an empty block list is the dangerous direction. Use
// Reload(ctx, true) to accept an intentionally emptied Redis.
//
// # Check
//
// Check(site, bundle, ip, ifa, uid) reports the first list that blocks the
// request and its OpenRTB no-bid reason: a blocked site domain or app bundle
// gives 7 (blocked publisher or site), a blocked IP, device or user gives 4
// (suspected non-human traffic), a data-centre IP gives 5 (cloud, data
// centre or proxy IP). Empty arguments are not checked. It reads the current
// snapshot with one atomic load; a CIDR match costs one map lookup per
// distinct prefix length in the list.
package fraud
