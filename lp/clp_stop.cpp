//go:build cgo && clp

// A CLP solve cannot be interrupted through CLP's C interface or
// github.com/lanl/clp. CLP's C++ API can: an event handler is asked after
// every simplex iteration whether to go on. This one stops as soon as the
// Go side sets a flag, when the solve's context is done.

// CLP_EXTERN_C makes Coin_C_defines.h define Clp_Simplex's layout (a
// ClpSimplex* first) instead of leaving it opaque.
#define CLP_EXTERN_C
#include <coin/ClpSimplex.hpp>
#include <coin/ClpEventHandler.hpp>
#include <coin/Clp_C_Interface.h>

extern "C" {
#include "clp_stop.h"
}

namespace {

class stopHandler : public ClpEventHandler {
public:
  explicit stopHandler(int *flag) : flag_(flag) {}
  stopHandler(const stopHandler &o) : ClpEventHandler(o), flag_(o.flag_) {}
  ClpEventHandler *clone() const override { return new stopHandler(*this); }
  // event returns 0 (stop, with status 5) once the flag is set, and -1
  // (go on) before.
  int event(Event) override {
    return __atomic_load_n(flag_, __ATOMIC_RELAXED) != 0 ? 0 : -1;
  }

private:
  int *flag_;
};

} // namespace

int lp_stop_attach(void *model, int *flag) {
  ClpSimplex *m = static_cast<Clp_Simplex *>(model)->model_;
  if (m == nullptr) {
    return -1;
  }
  stopHandler h(flag);
  m->passInEventHandler(&h); // CLP keeps a clone
  return 0;
}
