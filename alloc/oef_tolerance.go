package alloc

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/lp"
)

// checkEnvyTolerance validates OEFSettings.EnvyTolerance for mode.
func checkEnvyTolerance(eps float64, mode OEFMode) error {
	switch {
	case eps == 0:
		return nil
	case !(eps > 0 && eps < 1):
		return gpufair.Invalid("OEF.Settings.EnvyTolerance", "", gpufair.ErrValue, "%v is not in [0, 1)", eps)
	case mode != Cooperative:
		return gpufair.Invalid("OEF.Settings.EnvyTolerance", "", gpufair.ErrValue, "%v: envy tolerance is for cooperative mode, not %v", eps, mode)
	}
	return nil
}

// envyCells groups the virtual users into cells for EnvyTolerance ε
// (ratioCells): a user joins the first cell whose leader has the same cap
// and speedups within a factor √(1+ε) of its own on every type. The
// leader stands for the cell in the LP (classProblem uses each class's
// first member), so every member's speedups lie within that factor of the
// speedups the LP allocates by.
func (in *oefInstance) envyCells(eps float64) rowClasses {
	var same func(lead, v int) bool
	if in.cap != nil {
		same = func(lead, v int) bool { return in.cap[lead]/in.weight[lead] == in.cap[v]/in.weight[v] }
	}
	rc, _ := ratioCells(in.speed, eps, same, len(in.speed))
	return rc
}

// certifyCells returns the certificate of cells' bundles y, handed to
// every member, over the virtual users themselves, and checks its envy
// against the bound of EnvyTolerance ε (see OEFSettings).
//
// Why the bound holds: for a user v of a cell led by r, r/√(1+ε) ≤ s_v ≤
// r·√(1+ε) on every type, and the cell LP's solution is envy-free for r up
// to certEnvyTol (certified). For any other cell's bundle y_u,
// s_v·y_u ≤ √(1+ε)·r·y_u ≤ √(1+ε)·(r·y_cell + tol) ≤ (1+ε)·s_v·y_cell +
// √(1+ε)·tol, so v's envy is at most ε of its own value, plus the
// solver's tolerance scaled by √(1+ε)·(1+ε). Caps are equal within a cell,
// so the scaled envy rows of capped OEF obey the same bound.
func (in *oefInstance) certifyCells(ctx context.Context, cells rowClasses, y [][]float64, eps float64) (OEFCertificate, error) {
	users := identityClasses(len(in.speed))
	q := in.classProblem(users)
	x := make([][]float64, len(in.speed))
	for v := range x {
		x[v] = y[cells.of[v]]
	}
	cert, err := q.certify(ctx, x, coopDual{})
	if err != nil {
		return cert, err
	}
	if limit := eps + certEnvyTol*(1+eps)*(1+eps); cert.Envy > limit {
		return cert, fmt.Errorf("%w: %w: envy %.3g beyond the tolerance's bound %.3g", lp.ErrNumerical, errUncertified, cert.Envy, limit)
	}
	return cert, nil
}
