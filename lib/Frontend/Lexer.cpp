//===- Lexer.cpp - tokens of the Recur language ---------------------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Frontend/Lexer.h"
#include "recur/Frontend/Diagnostics.h"

#include "llvm/ADT/StringSwitch.h"

#include <cctype>
#include <cstdio>
#include <string>

using namespace recur::frontend;

namespace {
bool isIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }

/// `U+00E9` for a UTF-8 sequence, `byte 0xFF` for a byte that starts none.
std::string codePoint(llvm::StringRef text) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned lead = byte(0), extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2
                                   : lead >= 0xC0 ? 1 : 0;
  uint32_t cp = extra == 3 ? lead & 0x07 : extra == 2 ? lead & 0x0F
                                         : extra == 1 ? lead & 0x1F : lead;
  bool valid = (lead < 0x80 || extra) && lead < 0xF8 && text.size() == extra + 1;
  for (size_t i = 1; valid && i <= extra; ++i)
    cp = (cp << 6) | (byte(i) & 0x3F);
  char buf[16];
  if (valid)
    std::snprintf(buf, sizeof(buf), "U+%04X", static_cast<unsigned>(cp));
  else
    std::snprintf(buf, sizeof(buf), "byte 0x%02X", lead);
  return buf;
}
} // namespace

Token Lexer::make(Tok kind, const char *start, bool startsLine) {
  Token t;
  t.kind = kind;
  t.text = llvm::StringRef(start, cur - start);
  t.startsLine = startsLine;
  return t;
}

Token Lexer::next() {
  bool startsLine = cur == buffer.begin();
  const char *end = buffer.end();
  // Skip whitespace and comments, noting line breaks.
  while (cur < end) {
    if (*cur == '\n') {
      startsLine = true;
      ++cur;
    } else if (std::isspace(static_cast<unsigned char>(*cur))) {
      ++cur;
    } else if (*cur == '#') {
      while (cur < end && *cur != '\n')
        ++cur;
    } else {
      break;
    }
  }
  const char *start = cur;
  if (cur >= end)
    return make(Tok::Eof, start, startsLine);

  char c = *cur++;
  if (isIdentStart(c)) {
    while (cur < end && isIdentChar(*cur))
      ++cur;
    llvm::StringRef text(start, cur - start);
    Tok kind = llvm::StringSwitch<Tok>(text)
                   .Case("layer", Tok::KwLayer)
                   .Case("fn", Tok::KwFn)
                   .Case("dim", Tok::KwDim)
                   .Case("input", Tok::KwInput)
                   .Case("param", Tok::KwParam)
                   .Case("state", Tok::KwState)
                   .Case("output", Tok::KwOutput)
                   .Case("init", Tok::KwInit)
                   .Case("next", Tok::KwNext)
                   .Case("return", Tok::KwReturn)
                   .Case("do", Tok::KwDo)
                   .Default(Tok::Ident);
    return make(kind, start, startsLine);
  }
  if (isDigit(c)) {
    bool isFloat = false;
    while (cur < end && isDigit(*cur))
      ++cur;
    if (cur + 1 < end && *cur == '.' && isDigit(cur[1])) {
      isFloat = true;
      cur += 2;
      while (cur < end && isDigit(*cur))
        ++cur;
    }
    if (cur < end && (*cur == 'e' || *cur == 'E')) {
      const char *exp = cur + 1;
      if (exp < end && (*exp == '+' || *exp == '-'))
        ++exp;
      if (exp < end && isDigit(*exp)) {
        isFloat = true;
        cur = exp;
        while (cur < end && isDigit(*cur))
          ++cur;
      }
    }
    if (cur < end && isIdentStart(*cur)) {
      while (cur < end && isIdentChar(*cur))
        ++cur;
      Token t = make(Tok::Error, start, startsLine);
      diags.error(t.getRange(), "invalid number '" + t.text + "'");
      return t;
    }
    return make(isFloat ? Tok::Float : Tok::Int, start, startsLine);
  }
  switch (c) {
  case '(':
    return make(Tok::LParen, start, startsLine);
  case ')':
    return make(Tok::RParen, start, startsLine);
  case '[':
    return make(Tok::LBracket, start, startsLine);
  case ']':
    return make(Tok::RBracket, start, startsLine);
  case '{':
    return make(Tok::LBrace, start, startsLine);
  case '}':
    return make(Tok::RBrace, start, startsLine);
  case ',':
    return make(Tok::Comma, start, startsLine);
  case ':':
    return make(Tok::Colon, start, startsLine);
  case '=':
    return make(Tok::Equal, start, startsLine);
  case '+':
    return make(Tok::Plus, start, startsLine);
  case '-':
    return make(Tok::Minus, start, startsLine);
  case '*':
    return make(Tok::Star, start, startsLine);
  case '/':
    return make(Tok::Slash, start, startsLine);
  case '@':
    return make(Tok::At, start, startsLine);
  case '"': {
    while (cur < end && *cur != '"' && *cur != '\n')
      ++cur;
    if (cur >= end || *cur != '"') {
      Token t = make(Tok::Error, start, startsLine);
      diags.error(t.getRange(), "unterminated string");
      return t;
    }
    ++cur;
    return make(Tok::String, start, startsLine);
  }
  default:
    break;
  }
  // Consume a whole UTF-8 sequence so the caret points at one character.
  while (cur < end && (static_cast<unsigned char>(*cur) & 0xC0) == 0x80)
    ++cur;
  Token t = make(Tok::Error, start, startsLine);
  if (std::isprint(static_cast<unsigned char>(c)))
    diags.error(t.getRange(),
                std::string("unexpected character '") + c + "'");
  else
    // Name the code point: the caret line is not printed under a line with
    // non-ASCII text, so the message alone must say what is wrong.
    diags.error(t.getRange(), "unexpected character " + codePoint(t.text));
  return t;
}

llvm::StringRef recur::frontend::tokenName(Tok kind) {
  switch (kind) {
  case Tok::Eof:
    return "end of file";
  case Tok::Error:
    return "invalid token";
  case Tok::Ident:
    return "identifier";
  case Tok::Int:
    return "integer";
  case Tok::Float:
    return "number";
  case Tok::String:
    return "string";
  case Tok::LParen:
    return "'('";
  case Tok::RParen:
    return "')'";
  case Tok::LBracket:
    return "'['";
  case Tok::RBracket:
    return "']'";
  case Tok::LBrace:
    return "'{'";
  case Tok::RBrace:
    return "'}'";
  case Tok::Comma:
    return "','";
  case Tok::Colon:
    return "':'";
  case Tok::Equal:
    return "'='";
  case Tok::Plus:
    return "'+'";
  case Tok::Minus:
    return "'-'";
  case Tok::Star:
    return "'*'";
  case Tok::Slash:
    return "'/'";
  case Tok::At:
    return "'@'";
  case Tok::KwLayer:
    return "'layer'";
  case Tok::KwFn:
    return "'fn'";
  case Tok::KwDim:
    return "'dim'";
  case Tok::KwInput:
    return "'input'";
  case Tok::KwParam:
    return "'param'";
  case Tok::KwState:
    return "'state'";
  case Tok::KwOutput:
    return "'output'";
  case Tok::KwInit:
    return "'init'";
  case Tok::KwNext:
    return "'next'";
  case Tok::KwReturn:
    return "'return'";
  case Tok::KwDo:
    return "'do'";
  }
  return "token";
}
