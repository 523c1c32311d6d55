package alloc

import "github.com/gpufair/gpufair"

// jobPairTable returns each job's label (jobTypes, or the job IDs where it
// is nil) and pairs indexed by label and type, for a policy that pairs
// jobs; errors name policy's fields.
func jobPairTable(p *Problem, jobTypes []string, pairs []PairRate, policy string) ([]string, map[pairKey][2]float64, error) {
	labels := jobTypes
	if labels == nil {
		labels = p.JobIDs()
	} else if len(labels) != len(p.Jobs) {
		return nil, nil, gpufair.Invalid(policy+".JobTypes", "", gpufair.ErrShape, "%d labels for %d jobs", len(labels), len(p.Jobs))
	}
	labelIndex := map[string]int{}
	for _, l := range labels {
		labelIndex[l] = len(labelIndex)
	}
	rates, err := SpaceSharing{Pairs: pairs}.pairTable(p, labelIndex, policy+".Pairs")
	if err != nil {
		return nil, nil, err
	}
	return labels, rates, nil
}

// jobPairRates returns the co-located rates of a job labelled a and one
// labelled b on type k. Two jobs of one label each get the mean of the
// two measured rates, as SpaceSharing's classes do.
func jobPairRates(rates map[pairKey][2]float64, a, b string, k int) ([2]float64, bool) {
	r, ok := rates[pairKey{a, b, k}]
	if a == b {
		avg := (r[0] + r[1]) / 2
		r = [2]float64{avg, avg}
	}
	return r, ok
}

// jobSharing returns the SharingResult of jobs paired by partner
// (partner + 1 of each job, 0 alone), each job or pair taking time(i) of
// each type. Partners and Pairs name jobs by ID (Labels are the IDs); a
// pair without a measurement on a type counts half of each job's rate
// there (taking turns), as package sim runs it.
func jobSharing(p *Problem, rates map[pairKey][2]float64, labels []string, partner []int, time func(i int) []float64) *SharingResult {
	types := p.Capacity.NumTypes()
	res := &SharingResult{
		Allocation: NewAllocation(p.JobIDs(), p.Capacity),
		Throughput: make([]float64, len(p.Jobs)),
		Alone:      make([][]float64, len(p.Jobs)),
		Partners:   make([][]PartnerShare, len(p.Jobs)),
		Labels:     p.JobIDs(),
	}
	for i, j := range p.Jobs {
		gang := float64(j.Gang)
		res.Alone[i] = make([]float64, types)
		q := partner[i] - 1
		for k, f := range time(i) {
			if f == 0 {
				continue
			}
			if q < 0 {
				res.Alone[i][k] = f
				res.Allocation.GPUs[i][k] = f * gang
				res.Throughput[i] += f * p.Throughputs.At(i, k)
				continue
			}
			tk := p.Capacity.Types[k]
			res.Partners[i] = append(res.Partners[i], PartnerShare{With: string(p.Jobs[q].ID), Type: tk, Time: f})
			res.Allocation.GPUs[i][k] = f * gang / 2
			rate := p.Throughputs.At(i, k) / 2
			if r, ok := jobPairRates(rates, labels[i], labels[q], k); ok {
				rate = r[0]
			}
			res.Throughput[i] += f * rate
			if q > i {
				res.Pairs = append(res.Pairs, PairShare{A: string(j.ID), B: string(p.Jobs[q].ID), Type: tk, Time: f})
			}
		}
	}
	clampToCapacity(res.Allocation, p.Capacity)
	return res
}
