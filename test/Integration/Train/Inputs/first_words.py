"""What recur-train-char's `eval first words` line must count, computed
independently: the validation bytes of a text (--split tail or spread), its
whole windows of --seq bytes end to end (the evaluation without --stream),
and how many of their targets lie in the first word of their line (from the
line's start up to and including its first space) or not.

usage: first_words.py FILE SPLIT SEQ   prints `first <n> rest <n>`
"""
import sys

path, split, seq = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(path, "rb").read()
n = len(text)

# The first-word flag of every byte of the whole text.
flags = []
line_start = 0
for i in range(n):
    line = text[line_start:i]
    flags.append(b" " not in line)
    if text[i:i + 1] == b"\n":
        line_start = i + 1

if split == "tail":
    keep = list(range(n * 9 // 10, n))
else:
    # Pieces of ceil(n / 100) bytes, every tenth validating.
    piece = -(-n // 100)
    keep = [i for i in range(n) if (i // piece) % 10 == 9]
valid = [flags[i] for i in keep]

first = rest = 0
offset = 0
while offset + seq + 1 <= len(valid):
    for t in range(1, seq + 1):
        if valid[offset + t]:
            first += 1
        else:
            rest += 1
    offset += seq
print("first %d rest %d" % (first, rest))
