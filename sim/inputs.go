package sim

import "github.com/gpufair/gpufair/alloc"

// FIFOInputs is a PolicySettings.Inputs for alloc.FIFO: the active jobs'
// arrival times.
func FIFOInputs(st *State) alloc.Policy {
	arr := make([]float64, len(st.Active))
	for i, a := range st.Active {
		arr[i] = a.Job.Arrival
	}
	return alloc.FIFO{Arrival: arr}
}

// ShortestJobFirstInputs is a PolicySettings.Inputs for
// alloc.ShortestJobFirst: the active jobs' remaining steps.
func ShortestJobFirstInputs(st *State) alloc.Policy {
	return alloc.ShortestJobFirst{RemainingSteps: remaining(st)}
}

// MakespanInputs is a PolicySettings.Inputs for alloc.Makespan: the active
// jobs' remaining steps.
func MakespanInputs(st *State) alloc.Policy {
	return alloc.Makespan{RemainingSteps: remaining(st)}
}

// FinishTimeFairnessInputs is a PolicySettings.Inputs for
// alloc.FinishTimeFairness: remaining steps, the time since each job
// arrived, and the time its steps done would have taken on a 1/n share of
// the cluster, n being the active jobs (Gavel accumulates this round by
// round; here the current n prices all past progress).
func FinishTimeFairnessInputs(st *State) alloc.Policy {
	count, _ := typeCounts(st.Cluster, st.Types, "Types") // Run checked the types
	n := float64(len(st.Active))
	el := make([]float64, len(st.Active))
	iso := make([]float64, len(st.Active))
	for i, a := range st.Active {
		el[i] = st.Now - a.Job.Arrival
		iso[i] = (a.Job.Steps - a.Remaining) / isolatedRate(a.Job, count, n)
	}
	return alloc.FinishTimeFairness{RemainingSteps: remaining(st), Elapsed: el, IsolatedElapsed: iso}
}

func remaining(st *State) []float64 {
	r := make([]float64, len(st.Active))
	for i, a := range st.Active {
		r[i] = a.Remaining
	}
	return r
}
