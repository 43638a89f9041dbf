// Package auctionsim is the simulated first-price exchange that bid shading
// and pacing are judged on (`rtbd bench auction` prints it): segments whose
// highest competing bid is lognormal with known parameters, floors, a shift
// of every landscape mid-run, notices with or without the minimum bid to
// win (m) and with or without loss notices, played in-process on a fake
// clock against bidder/shading. It measures the surplus (value - price,
// summed over wins) against the oracle's (the best fixed bid per segment,
// computed from the known distribution and played on the same draws), the
// cost per win, and the wins and cost of bidding the value.
//
// RunPacing plays compressed days of a campaign with a daily budget:
// adaptive pacing (spend.Pacer) against pacing by throttling, both shading.
package auctionsim
