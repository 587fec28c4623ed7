// Fixture for check-diagnostic-coverage.py: the driver's fail().

int fail(const Twine &message) {
  WithColor::error(errs(), "recurc") << message << "\n";
  return 1;
}

int main() {
  if (bad)
    return fail("-D expects NAME=VALUE, got '" + d + "'");
  return fail(errorMessage);
}
