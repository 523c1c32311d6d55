// Package trade implements Gandiva_fair's second-price trading of GPU shares
// between tenants (Bidder: an alloc.Tenant, whose Weight is its tickets, and
// its throughput on each GPU type) across GPU types, and undoing trades when
// tenants arrive or leave. Market.Run takes a context, checked between
// trades.
package trade
