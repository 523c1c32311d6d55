// Package ftf computes Themis' finish-time fairness rho = T_shared /
// T_independent for single-job, successive-halving and performance-curve
// apps, and the bid tables an app's agent offers the arbiter.
package ftf
