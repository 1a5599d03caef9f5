package main

import (
	"flag"
	"slices"
	"strings"
)

// subcommandFlags defines, for each subcommand with flags of its own, those flags on a flag set: rlock uses it to
// tell someone who put such a flag before the subcommand's name where it goes.
var subcommandFlags = []struct {
	name   string
	define func(*flag.FlagSet)
}{
	{"exec", func(fs *flag.FlagSet) { new(execFlags).define(fs) }},
	{"lock", func(fs *flag.FlagSet) { new(lockFlags).define(fs) }},
	{"unlock", func(fs *flag.FlagSet) { defineUnlockFlags(fs) }},
}

// undefinedFlagPrefix starts the flag package's error for a flag the set does not define.
const undefinedFlagPrefix = "flag provided but not defined: -"

// globalFlagError explains, in one line, an error of the flags given before the subcommand: a subcommand's flag
// given too early gets the command line with the flag moved where it belongs.
func globalFlagError(err error, args []string) string {
	msg := err.Error()
	name, undefined := strings.CutPrefix(msg, undefinedFlagPrefix)
	if !undefined {
		return "rlock: " + msg + " (run rlock -h for the flags)"
	}
	var owners []string
	for _, sc := range subcommandFlags {
		fs := flag.NewFlagSet(sc.name, flag.ContinueOnError)
		sc.define(fs)
		if fs.Lookup(name) != nil {
			owners = append(owners, sc.name)
		}
	}
	if len(owners) == 0 {
		return "rlock: " + msg + " (run rlock -h for the flags)"
	}
	sub := slices.IndexFunc(args, func(a string) bool { _, ok := subcommands[a]; return ok })
	switch {
	case sub < 0:
		return "rlock: -" + name + " is a flag of " + strings.Join(owners, " and ") + ": it goes after the command " +
			"name, as in rlock " + owners[0] + " -" + name + " ... NAME (run rlock -h for the forms)"
	case !slices.Contains(owners, args[sub]):
		return "rlock: -" + name + " is a flag of " + strings.Join(owners, " and ") + ", not of " + args[sub] +
			" (run rlock " + args[sub] + " -h for its flags)"
	}
	// Move the subcommand's flags (with their values) right after its name, keeping the common ones in place.
	own := flag.NewFlagSet(args[sub], flag.ContinueOnError)
	for _, sc := range subcommandFlags {
		if sc.name == args[sub] {
			sc.define(own)
		}
	}
	var before, moved []string
	for i := 0; i < sub; i++ {
		n, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		f := own.Lookup(n)
		if !strings.HasPrefix(args[i], "-") || f == nil {
			before = append(before, args[i])
			continue
		}
		moved = append(moved, args[i])
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && b.IsBoolFlag()) && i+1 < sub {
			i++
			moved = append(moved, args[i])
		}
	}
	line := slices.Concat(before, args[sub:sub+1], moved, args[sub+1:])
	words := make([]string, len(line))
	for i, a := range line {
		words[i] = shellQuote(a)
	}
	return "rlock: flags of " + args[sub] + " go after its name: rlock " + strings.Join(words, " ")
}
