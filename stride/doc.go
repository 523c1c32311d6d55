// Package stride realises shares over time: Gandiva_fair's gang-aware and
// split stride scheduling with ticket load balancing (EuroSys'20, sections 3.1
// to 3.3), Gavel's round-based mechanism (OSDI'20, section 5) and OEF's
// rounding placer with carried deviation (Middleware'24, section 4.3).
//
// # Gang-aware stride (Scheduler)
//
// A job j (an alloc.Job) of Gang r_j GPUs and Weight T_j (its tickets) has
// stride r_j/T_j and a pass value p_j. Each quantum, jobs are taken in increasing (pass, JobID) order
// and each that fits in the GPUs still free runs and advances its pass by its
// stride; a job that does not fit keeps its pass, so it comes early in the
// next quantum (Algorithm 1). Dividing by the gang is what makes GPU-time,
// not run count, proportional to tickets: p_j grows by exactly the job's
// GPU-quanta divided by its tickets, which is why Table 2's shares (2/3, 1/3
// and 1/6 of the time for 1-, 2- and 4-GPU jobs of equal tickets) come out
// (shared/ERRATA.md, Gandiva_fair). Passes are computed as base + n·stride,
// not accumulated, so jobs whose strides are in a power-of-two ratio tie
// exactly and ties go to the smaller JobID.
//
// # Split stride (Split)
//
// A central scheduler keeps the passes of multi-server jobs and one aggregate
// pass per server, with stride g_l / Σ tickets of the server's small jobs;
// choosing a server's aggregate runs that server's own gang-aware stride on
// its free GPUs. Ties at the centre go to multi-server jobs, then to servers
// in cluster order.
//
// # Ticket accounting (Fair)
//
// Tenants are alloc.Tenant values whose Weight t_i is Gandiva_fair's
// tickets. Fair keeps the paper's equations: ticketsPerGPU_i = t_i / Σ_k r_ik (1),
// ticketLoadPerGPU_l = Σ_{jobs on l} r·ticketsPerGPU / g_l (2) and jobTickets
// = ticketsPerGPU_i·r (3), per GPU type; it places each new job on the
// servers of lowest ticket load after the job is counted (Algorithm 2; a
// job's profile is its throughput per GPU type, Submission.Rates),
// proposes migrations when loads drift apart by more than a threshold, and
// gives tenants whose jobs cannot use their share a smaller effective ticket
// count so the rest is shared among the others (weight readjustment, the
// "bonus" of section 3.2). With Settings.Pack it also packs jobs into
// servers, at placement and by migration, so that no server idles GPUs
// while its largest gang waits (section 3.3, which gives no rule; Fair's is
// in Settings.Pack). Packing fills idle GPUs but cannot give a gang that
// fills its server more than half of it beside any job with the same
// tickets per GPU: such a gang runs only when its pass is least.
//
// # Lottery (Lottery)
//
// Table 2's comparisons: gang-aware lottery scheduling on one server, with
// backfilling (Backfill) or with a waiting queue (GangLottery), drawing
// from a caller's rand.Source. ExampleLottery sets it beside stride.
//
// # Gandiva_fair on the round contract (GandivaFair)
//
// GandivaFair is a round.Scheduler: tenants (the jobs' owners) hold
// tickets; each quantum it profiles the jobs' rates from the progress they
// report, admits waiting jobs from the least served tenant's queue
// (Algorithm 2), trades GPU shares between tenants at the second price
// (package trade, with selective undo), migrates jobs across types to the
// GPUs their tenant holds and across servers to even out ticket load, and
// runs split stride on the healthy GPUs. ExampleGandivaFair shows the loop.
//
// # Gavel's scheduler on the round contract (Gavel)
//
// Gavel is a round.Scheduler: events in (jobs arrive, progress, depart;
// GPUs fail and are repaired; rates are measured), one leased decision per
// round out, the whole state as a JSON snapshot. It solves any policy of
// package alloc over the jobs in the system when they change, and realises
// the allocation X_mk round by round with priority X_mk / f_mk, f_mk being
// the fraction of the time since m arrived that m actually ran on type k;
// then it gives the GPUs left idle to waiting jobs (work conservation),
// keeps gangs within their preemption budget on their slots, and places the
// rest on the fewest servers, never on a failed GPU. ExampleGavel shows a
// scheduler's loop.
//
// # Allocation-only round mechanisms (Rounds, Rounder)
//
// Rounds realises a fixed fractional allocation X_mk round by round, with
// no events, failures or budget: priority X_mk / f_mk with f_mk counted in
// rounds since m was added, and only pairs with X_mk > 0 are considered, so
// GPUs the allocation leaves unused stay idle. It also takes job
// combinations (several jobs sharing GPUs). Rounder is OEF's placer: it
// rounds each user's fractional GPUs per type to integers with the
// deviation carried to the next round, never giving a user fewer GPUs than
// its smallest job needs, and places larger jobs first.
//
// Every scheduler is a value with methods; the quantum or round index is a
// parameter and must increase; nothing depends on map order or on global
// randomness. Bad input gets *gpufair.InputError values wrapping the
// sentinel errors of package gpufair.
package stride
