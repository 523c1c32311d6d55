// Package trade implements Gandiva_fair's second-price trading of GPU shares
// between users across GPU types, and undoing trades when users arrive or
// leave.
package trade
