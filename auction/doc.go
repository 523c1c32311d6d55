// Package auction implements Themis' partial-allocation auction (Cole,
// Gkatzelis and Goel's mechanism: proportional fairness, hidden payments,
// leftovers) for divisible goods and for bid tables over indivisible GPUs,
// and the multi-round arbiter with leases and a filtering fraction.
package auction
