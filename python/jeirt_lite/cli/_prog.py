"""The command line's name, in a module that imports nothing: every part of the command line names it, the parser
class in _options and the stdout handling in _stdout among them (_options uses _stdout's helpers)."""

PROG = "jeirt-lite"
