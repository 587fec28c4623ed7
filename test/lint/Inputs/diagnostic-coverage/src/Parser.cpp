// Fixture for check-diagnostic-coverage.py: covered and uncovered messages.

void Parser::parseLayer() {
  // Covered: the expect() message is spelled out in full by a test.
  if (!expect(Tok::Ident, "after 'layer' (the layer's name)"))
    return;
  // Not covered: no test checks this expect().
  expect(Tok::LBrace, "to open the layer body");
  // Covered only by the first words of its text: not enough.
  error(range, "unknown name '" + name + "'; names are bound with '='");
  // Two messages in one: the test checks only the first.
  error(range, split ? "'heads' splits " + x.str()
                     : "'merge_heads' merges " + x.str());
  // A plural "s" is not a message of its own.
  gen.error(range, "takes " + llvm::Twine(n) + " argument" +
                       (n == 1 ? "" : "s"));
  // Checked only by a CHECK-NOT, which proves nothing.
  error(range, "state '" + name + "' is updated twice");
  note(range, "previous definition is here");
  // untestable: only a bug in the fixture gets here.
  error(range, "internal error: the fixture broke");
  llvm::errs() << "error: too many errors emitted, stopping now\n";
}
