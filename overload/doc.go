// Package overload keeps a server answering in time when it is offered
// more than it can do: the in-flight bound (InFlight), shedding by each
// request's queueing delay against its own budget (Admission, fed by the
// kernel's receive times of overload/arrival), connection limits
// (LimitConns for a fasthttp server, AddrLimit per remote address,
// PublicListener for the bidder's public listener),
// graceful closing of refused connections (Drain, DrainOnClose), and
// per-source rate limits (Limiter, ClientAddr).
//
// Everything on a request's path is allocation-free and safe for
// concurrent use; nothing runs a goroutine of its own. README.md beside
// this file explains the admission controller and its settings.
package overload
