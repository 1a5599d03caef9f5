// Package scripts holds every Lua script package rlock runs on the server, each with its contract: its name, its
// source, what its KEYS and ARGV are and what it replies. All is the table of them; rlock builds from it the
// EVALSHA-ready values it sends and the listing it exports (rlock.Scripts), and its tests run the scripts by the
// same entries, so that a contract is written once, beside its source.
//
// The scripts keep Redisson's keyspace (the keys, fields and messages of Redisson's objects of the same kind), so
// that a Redisson client working on the same name sees exactly what it would write itself; each kind's file
// describes its layout. Each operation is one script: one round trip, atomic on the server. Replies differ from
// Redisson's only where nobody but rlock reads them (a Redisson client never reads the reply to rlock's scripts).
//
// The sources are built from Go string constants, some of them fragments several scripts share (the publish
// prelude, the conditional release, the queue's functions). What SCRIPT LOAD receives, and so every SHA-1, is the
// concatenation: a change to a fragment changes every script built from it.
//
// The package imports only the standard library: it is the contract, not the client.
package scripts
