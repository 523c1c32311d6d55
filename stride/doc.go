// Package stride realises shares over time: Gandiva_fair's gang-aware and
// split stride scheduling with ticket load balancing, Gavel's round-based
// mechanism, and OEF's rounding placer with carried deviation.
package stride
