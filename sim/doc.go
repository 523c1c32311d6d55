// Package sim is a trace-driven, discrete-event simulator of a shared GPU
// cluster: jobs arrive from a trace (or are generated the way Gavel's
// simulator generates them), a scheduler on the round contract (package
// round) decides round by round which of them run on which GPUs, and the
// simulator advances every running job by its measured throughput on the
// GPUs it got, until the jobs finish. It reports the metrics the papers
// evaluate mechanisms by: job completion time (mean and tail), Themis'
// finish-time fairness rho (its distribution and maximum), makespan, GPU
// time and utilisation, and the cost of preemption (the share of gangs
// restarted from a checkpoint each round).
//
// It is a package of the public API, not an internal one, because comparing
// mechanisms on a replayed trace is how each of the four papers evaluates
// itself, and researchers who write a mechanism of their own need to replay
// it on the same traces with the same metrics: any round.Scheduler plugs in
// (Gavel's mechanism over any policy of package alloc, stride.Gavel;
// Themis' arbiter, auction.Themis; a mechanism of one's own), and Run
// drives it exactly as a production scheduler would.
//
// # Model
//
// Time is in seconds and proceeds in rounds of length L (Settings.Round,
// Gavel's 6 minutes by default): round r starts at r·L. At the start of
// each round the simulator applies, in time order, the events since the
// previous round (round.Arrive for the jobs that arrived, with Weight 0
// read as 1 and their Steps as total work; round.Progress for the jobs that
// ran; round.Depart at each finish; round.Fail and round.Repair for
// Settings.Failures), then asks the scheduler for the round's
// round.Decision, and checks it (ErrPlacement): a job that arrives during a
// round waits for the next one. Each placement runs its job on Gang GPU
// slots of one type for its lease, the round or less if the decision's
// End is earlier, or not at all. A job j running on type k progresses at
// Rates[k] steps per second when its slots are on one server and at
// Spread[k] when they span servers (Gavel's consolidated and unconsolidated
// throughputs), so placement matters; jobs placed together on the same
// GPUs (a placement of several Jobs) share that rate, and the GPU time,
// equally, for the whole lease, as the simulator has no co-location
// measurements (unless Settings.Colocated gives them). An Elastic job
// may be placed on 1 to Gang slots, and then progresses at its rate times
// slots/Gang (linear speedup, Themis' equation 1), holding only those
// slots. A job finishes at the exact moment its remaining steps reach
// zero; its GPUs then stay idle until the lease ends (as in Gavel's
// simulator), and so does its share of GPUs it shared: the jobs left keep
// the rates of their own shares. A placement on a GPU that fails during
// the round stops at the failure. If Settings.Restart is positive, a
// placement not marked Renewed with a job that ran before resumes from a
// checkpoint: each job of it that ran before first loses Restart seconds,
// and so do the others if it is marked Restart. A placement of jobs none
// of which ran before costs nothing, whatever its flags. A scheduler that
// does not set the flags with round.Ledger.Commit must itself mark
// Renewed the placements that keep their jobs on their slots, or pay a
// restart for each. Rounds with no job in the system are skipped. The
// scheduler is told each job's Rates on arrival, or with Settings.Profiled
// other rates, as profiled with error (ProfileNoise); the job still runs
// at its own.
//
// # Metrics
//
// JCT_j = finish_j − arrival_j. Finish-time fairness follows Themis
// (NSDI'20, section 3.2): rho_j = T_sh/T_id, where T_sh is JCT_j and T_id is
// the time j would take alone on an exclusive 1/N share of the cluster, N
// being the number of jobs contending. N changes over time in a trace; the
// simulator uses N̄_j = (1/JCT_j)·∫ n(t) dt over j's lifetime, with n(t) the
// jobs arrived and not finished at t (j included), so N̄_j is the contention
// j saw. The 1/N share gives j a time fraction x_k = count_k/(N̄_j·gang_j) of
// each type k, scaled down to Σ_k x_k = 1 when it exceeds 1 (a job cannot
// run more than all the time), and T_id = steps_j / Σ_k x_k·Rates_j[k]
// (Gavel's "isolated" allocation, OSDI'20 section 7.3, with that cap).
// rho ≤ 1 is Themis' sharing incentive. A job's GPU time
// (JobResult.GPUSeconds) is Σ over its leases of s/m × t, s being the
// slots it was placed on (its gang, or fewer for an Elastic job), m the
// jobs sharing them and t the seconds from the lease's start to its end,
// a failure or the job's finish, seconds lost to a restart included; the
// run's GPU time (Themis' efficiency measure) is the sum over jobs.
// Utilisation is the run's GPU time over (GPUs × makespan), and makespan
// runs from the first arrival to the last finish.
//
// Apps (Themis' unit, Result.Apps) are the jobs of one owner: an app
// completes when its last job finishes, and its rho = (finish − first
// arrival)/T_id with Themis' T_id = B/min(R_C, D)·N_avg, B its work in
// GPU-seconds on each job's fastest type, D the sum of its gangs (the
// largest such sum over its phases, for an app whose jobs have phases),
// R_C the cluster's GPUs and N_avg the mean number of apps in the system
// over its life.
//
// An owner's jobs may come in phases with a barrier between them
// (Job.Phase), as successive halving runs its trials: a job of a later
// phase arrives when the last job of the phases before it finishes, and
// is reported to the scheduler, as an arrival at that time, at the next
// round.
//
// # Determinism
//
// Jobs are ordered by (Arrival, ID), events by time (then progress and
// departures, failures and repairs, arrivals), and generated workloads draw
// from the rand.Source the caller gives. The same inputs and a
// deterministic scheduler give the same Result, bit for bit.
//
// See ExampleRun.
package sim
