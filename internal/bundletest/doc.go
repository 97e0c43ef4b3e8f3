// Package bundletest holds a committed page build (a dist directory) to
// what its source builds, for the tests of the demo page and of the
// operator's console: it stores nothing and reaches no network.
package bundletest
