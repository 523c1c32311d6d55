package lp

import "strconv"

// String returns the name of s.
func (s Status) String() string {
	switch s {
	case Optimal:
		return "Optimal"
	case Infeasible:
		return "Infeasible"
	case Unbounded:
		return "Unbounded"
	case IterationLimit:
		return "IterationLimit"
	case TimeLimit:
		return "TimeLimit"
	case NumericalFailure:
		return "NumericalFailure"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// Resolve returns the backend that b selects in this binary: Default is
// CLP when the binary was built with cgo and PureGo otherwise; other
// backends are returned as they are.
func (b Backend) Resolve() Backend {
	if b == Default {
		return defaultBackend
	}
	return b
}

// String returns the name of b.
func (b Backend) String() string {
	switch b {
	case Default:
		return "Default"
	case CLP:
		return "CLP"
	case Gonum:
		return "Gonum"
	case PureGo:
		return "PureGo"
	}
	return "Backend(" + strconv.Itoa(int(b)) + ")"
}

// String returns the name of m.
func (m Method) String() string {
	switch m {
	case Auto:
		return "Auto"
	case DualSimplex:
		return "DualSimplex"
	case PrimalSimplex:
		return "PrimalSimplex"
	case Barrier:
		return "Barrier"
	}
	return "Method(" + strconv.Itoa(int(m)) + ")"
}

// String returns "Minimize" or "Maximize".
func (s Sense) String() string {
	switch s {
	case Minimize:
		return "Minimize"
	case Maximize:
		return "Maximize"
	}
	return "Sense(" + strconv.Itoa(int(s)) + ")"
}

// String returns the name of p.
func (p DualPricing) String() string {
	switch p {
	case DefaultPricing:
		return "DefaultPricing"
	case DevexPricing:
		return "DevexPricing"
	case SteepestEdgePricing:
		return "SteepestEdgePricing"
	}
	return "DualPricing(" + strconv.Itoa(int(p)) + ")"
}
