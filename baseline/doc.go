// Package baseline implements the schedulers Themis (NSDI'20, section 6.1)
// compares itself against, on the round contract of package round: Tiresias'
// discretised two-dimensional least-attained-service (NewTiresias), Gandiva's
// time slicing with greedy packing (NewGandiva), SLAQ's quality-driven
// scheduling (NewSLAQ), Optimus' remaining-time-driven scheduling
// (NewOptimus), and shortest remaining time first and remaining service first
// (NewSRTF).
//
// Each is a round.Scheduler built on a round.Ledger, as stride.Gavel is.
// Every round it ranks (job, GPU type) pairs by the baseline's own metric
// and runs them greedily: a pair runs if its job is not yet placed and Gang
// healthy GPUs of its type are left. Every pair on which a job has a
// positive rate is ranked, so no GPU is left idle while a waiting job could
// run on it (work conservation). Gangs that keep their type keep their
// slots (lease renewal); the others are placed on the fewest servers
// (topology.Placer), never on a failed GPU.
//
// Themis describes each baseline in one paragraph ("on any resource
// availability, all apps report ... and we allocate ... in a greedy ...
// manner"); where that paragraph is silent, each scheduler follows the
// paper Themis cites for it, and its doc comment says so. None of the
// original systems knew GPU types: a job's types are ranked by its rate on
// them, fastest first, wherever its own metric does not rank them.
//
// Pairs that tie on the metric go in (arrival, JobID) order; a job's pairs
// that tie go fastest type first (highest rate), then in GPU type order.
// So where a metric ties across a job's types (Optimus' +Inf for a job
// that has not run, SLAQ's capped loss), the faster type wins before type
// order. Equal inputs give equal decisions, and a scheduler restored from
// a snapshot makes the same next decision as the one that took it. See
// the examples.
package baseline
