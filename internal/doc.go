// Package internal holds helpers shared by several gpufair packages; its
// subpackages are not part of the public API.
package internal
