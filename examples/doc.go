// Package examples holds programs and tests that show how to use locksmith from another module, and keeps the
// README's code honest: the README's Go blocks are compiled by this module's tests, and miniredis/ shows how to
// unit-test code that takes locks without a Redis server. It is a module of its own, so that its test-only
// dependencies (miniredis) never reach programs that import the library.
package examples
