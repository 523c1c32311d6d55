// The cancellation hook of the CLP backend (clp_stop.cpp).

// lp_stop_attach gives the ClpSimplex behind model, a Clp_Simplex*, an
// event handler that stops the solve at the end of the first iteration
// after *flag becomes nonzero. It returns 0, or -1 for a model without one.
int lp_stop_attach(void *model, int *flag);
