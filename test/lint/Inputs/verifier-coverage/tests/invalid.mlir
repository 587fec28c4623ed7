// Fixture for check-verifier-coverage.py: not a lit test.

func.func @foo_axis_negative() {
  // expected-error @+1 {{'axis' -1 of 'foo' is negative}}
  %0 = recur.foo along -1
}

// @below skips the other designator lines.
func.func @foo_length_odd_and_shared_message() {
  // expected-error @below {{'recur.foo' op 'length' (3) must be even; the "pairs" layout, split over literals, needs it}}
  // expected-error @+1 {{'recur.foo' op shares a message}}
  %0 = recur.foo length 3 name "y"
}

// Spells only the first words of the message: not enough.
func.func @foo_rank_too_big() {
  // expected-error @+1 {{'recur.foo' op 'rank' 4 is above}}
  %0 = recur.foo rank 4
}

// The helper's message is covered by a test on any op.
func.func @bar_width_zero() {
  // expected-error @+1 {{'recur.bar' op 'width' must be positive, got 0}}
  "recur.bar"() {width = 0} : () -> ()
}

func.func @bar_count_negative() {
  "recur.bar"() {count = -2} : () -> () // expected-error {{'recur.bar' op 'count' must be non-negative, got -2}}
}
