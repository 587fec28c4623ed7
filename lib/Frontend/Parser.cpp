//===- Parser.cpp - parser of the Recur language --------------------------===//
//
// Part of the Recur project.
//
// Grammar (newlines are insignificant; `#` comments):
//
//   module    := (layer | fn)*
//   layer     := 'layer' IDENT '{' item* '}'
//   item      := 'dim' IDENT ('=' dimexpr)?
//              | ('input'|'param'|'state'|'output') IDENT ':' type
//                ('init' IDENT ('(' expr (',' expr)* ')')?)?
//              | stmt
//   fn        := 'fn' IDENT '(' (IDENT (',' IDENT)*)? ')' '{' stmt* '}'
//   stmt      := IDENT (',' IDENT)* '=' expr
//              | 'next' IDENT '=' expr
//              | 'return' expr (',' expr)*
//   type      := DTYPE ('[' dimexpr (',' dimexpr)* ']')?
//   dimexpr   := dimterm (('+'|'-') dimterm)*
//   dimterm   := dimatom (('*'|'/') dimatom)*
//   dimatom   := INT | IDENT | '(' dimexpr ')'
//   expr      := mul (('+'|'-') mul)*
//   mul       := unary (('*'|'/'|'@') unary)*
//   unary     := '-' unary | primary
//   primary   := NUMBER | STRING | IDENT | call | '(' expr (',' expr)* ')'
//   call      := IDENT '(' (arg (',' arg)*)? ')' ('do' body)?
//   arg       := IDENT '=' expr | expr
//   body      := '(' (IDENT (',' IDENT)*)? ')' '{' stmt* '}'
//
//===----------------------------------------------------------------------===//

#include "recur/Frontend/Parser.h"

#include <cstdlib>

using namespace recur::frontend;

namespace {
/// Deeper nesting than this is reported instead of overflowing the stack.
constexpr unsigned kMaxDepth = 200;

/// Restores the nesting depth on every way out of a scope.
class DepthGuard {
public:
  explicit DepthGuard(unsigned &depth) : depth(depth), saved(depth) {}
  ~DepthGuard() { depth = saved; }

private:
  unsigned &depth;
  unsigned saved;
};

bool startsItem(Tok kind) {
  switch (kind) {
  case Tok::KwDim:
  case Tok::KwInput:
  case Tok::KwParam:
  case Tok::KwState:
  case Tok::KwOutput:
  case Tok::KwNext:
  case Tok::KwReturn:
  case Tok::KwLayer:
  case Tok::KwFn:
    return true;
  default:
    return false;
  }
}
} // namespace

bool Parser::expect(Tok kind, llvm::StringRef context) {
  if (consumeIf(kind))
    return true;
  if (!tok.is(Tok::Error))
    diags.error(tok.getRange(), "expected " + tokenName(kind) + " " + context +
                                    ", found " + tokenName(tok.kind));
  return false;
}

void Parser::recover() {
  // Always make progress, then stop at a line start, a block end or a keyword
  // that begins the next item. A block opened on the way (a broken `do`
  // body) is skipped whole, so its '}' does not close the enclosing one.
  unsigned open = 0;
  auto step = [&] {
    if (tok.is(Tok::LBrace))
      ++open;
    else if (tok.is(Tok::RBrace) && open)
      --open;
    consume();
  };
  if (!tok.is(Tok::Eof) && !tok.is(Tok::RBrace))
    step();
  while (!tok.is(Tok::Eof)) {
    if (open) {
      if (tok.is(Tok::KwLayer) || tok.is(Tok::KwFn))
        break;
      step();
      continue;
    }
    if (tok.is(Tok::RBrace) || startsItem(tok.kind) || tok.startsLine)
      break;
    step();
  }
}

Module Parser::parseModule() {
  Module module;
  // After a broken layer or fn header, what follows up to the next item is
  // its unparsed rest, not a mistake of its own.
  bool skipping = false;
  while (!tok.is(Tok::Eof)) {
    if (tok.is(Tok::KwLayer)) {
      skipping = !parseLayer(module);
    } else if (tok.is(Tok::KwFn)) {
      skipping = !parseFn(module);
    } else {
      if (!tok.is(Tok::Error) && !skipping)
        diags.error(tok.getRange(), "expected 'layer' or 'fn' at the top "
                                    "level, found " +
                                        tokenName(tok.kind));
      consume();
      while (!tok.is(Tok::Eof) && !tok.is(Tok::KwLayer) && !tok.is(Tok::KwFn))
        consume();
    }
  }
  return module;
}

bool Parser::parseLayer(Module &module) {
  llvm::SMLoc start = tok.getLoc();
  consume(); // 'layer'
  LayerDecl layer;
  if (!tok.is(Tok::Ident)) {
    expect(Tok::Ident, "after 'layer' (the layer's name)");
    return false;
  }
  layer.name = tok.text.str();
  consume();
  if (!expect(Tok::LBrace, "to open the layer body"))
    return false;
  parseBodyStmts(layer.stmts, &layer);
  layer.range = rangeFrom(start);
  module.layers.push_back(std::move(layer));
  return true;
}

bool Parser::parseFn(Module &module) {
  llvm::SMLoc start = tok.getLoc();
  consume(); // 'fn'
  FnDecl fn;
  if (!tok.is(Tok::Ident)) {
    expect(Tok::Ident, "after 'fn' (the function's name)");
    return false;
  }
  fn.name = tok.text.str();
  consume();
  std::unique_ptr<Body> body = parseBody();
  if (!body)
    return false;
  fn.body = std::move(*body);
  fn.range = rangeFrom(start);
  module.fns.push_back(std::move(fn));
  return true;
}

/// Parses items up to the closing '}' (consumed). Layer declarations are
/// accepted only when `layer` is given.
bool Parser::parseBodyStmts(std::vector<StmtPtr> &stmts, LayerDecl *layer) {
  while (!tok.is(Tok::RBrace)) {
    if (tok.is(Tok::Eof)) {
      diags.error(tok.getRange(), "expected '}' to close the body, found end "
                                  "of file");
      return false;
    }
    if (tok.is(Tok::KwLayer) || tok.is(Tok::KwFn)) {
      diags.error(tok.getRange(), "expected '}' before the next " +
                                      tokenName(tok.kind));
      return false;
    }
    Tok kind = tok.kind;
    bool ok = true;
    bool isDecl = kind == Tok::KwDim || kind == Tok::KwInput ||
                  kind == Tok::KwParam || kind == Tok::KwState ||
                  kind == Tok::KwOutput;
    if (isDecl && !layer) {
      diags.error(tok.getRange(),
                  tokenName(kind) + " declarations belong in a layer, not in "
                                    "a function body");
      ok = false;
    } else if (kind == Tok::KwDim) {
      ok = parseDimDecl(*layer);
    } else if (isDecl) {
      Role role = kind == Tok::KwInput   ? Role::Input
                  : kind == Tok::KwParam ? Role::Param
                  : kind == Tok::KwState ? Role::State
                                         : Role::Output;
      ok = parseTensorDecl(*layer, role);
    } else if (StmtPtr stmt = parseStmt()) {
      stmts.push_back(std::move(stmt));
    } else {
      ok = false;
    }
    if (!ok)
      recover();
  }
  consume(); // '}'
  return true;
}

bool Parser::parseDimDecl(LayerDecl &layer) {
  llvm::SMLoc start = tok.getLoc();
  consume(); // 'dim'
  // `dim B, T` declares several runtime dims at once.
  do {
    if (!tok.is(Tok::Ident))
      return expect(Tok::Ident, "after 'dim' (the dimension's name)");
    DimDecl decl;
    decl.name = tok.text.str();
    llvm::SMRange nameRange = tok.getRange();
    consume();
    if (consumeIf(Tok::Equal)) {
      decl.value = parseDimExpr();
      if (!decl.value)
        return false;
    }
    decl.range = decl.value ? rangeFrom(start) : nameRange;
    layer.dims.push_back(std::move(decl));
  } while (consumeIf(Tok::Comma));
  return true;
}

std::unique_ptr<DimExpr> Parser::parseDimExpr() {
  llvm::SMLoc start = tok.getLoc();
  std::unique_ptr<DimExpr> lhs = parseDimTerm();
  // Each operator nests the (left-deep) tree one level further.
  DepthGuard guard(depth);
  while (lhs && (tok.is(Tok::Plus) || tok.is(Tok::Minus))) {
    if (++depth > kMaxDepth) {
      diags.error(tok.getRange(), "dimension expression nested too deeply");
      return nullptr;
    }
    char op = tok.text[0];
    consume();
    std::unique_ptr<DimExpr> rhs = parseDimTerm();
    if (!rhs)
      return nullptr;
    auto bin = std::make_unique<DimExpr>();
    bin->kind = DimExpr::Kind::Binary;
    bin->op = op;
    bin->lhs = std::move(lhs);
    bin->rhs = std::move(rhs);
    bin->range = rangeFrom(start);
    lhs = std::move(bin);
  }
  return lhs;
}

std::unique_ptr<DimExpr> Parser::parseDimTerm() {
  llvm::SMLoc start = tok.getLoc();
  std::unique_ptr<DimExpr> lhs = parseDimAtom();
  DepthGuard guard(depth);
  while (lhs && (tok.is(Tok::Star) || tok.is(Tok::Slash))) {
    if (++depth > kMaxDepth) {
      diags.error(tok.getRange(), "dimension expression nested too deeply");
      return nullptr;
    }
    char op = tok.text[0];
    consume();
    std::unique_ptr<DimExpr> rhs = parseDimAtom();
    if (!rhs)
      return nullptr;
    auto bin = std::make_unique<DimExpr>();
    bin->kind = DimExpr::Kind::Binary;
    bin->op = op;
    bin->lhs = std::move(lhs);
    bin->rhs = std::move(rhs);
    bin->range = rangeFrom(start);
    lhs = std::move(bin);
  }
  return lhs;
}

std::unique_ptr<DimExpr> Parser::parseDimAtom() {
  if (depth > kMaxDepth) {
    diags.error(tok.getRange(), "dimension expression nested too deeply");
    return nullptr;
  }
  auto atom = std::make_unique<DimExpr>();
  atom->range = tok.getRange();
  if (tok.is(Tok::Int)) {
    atom->kind = DimExpr::Kind::Int;
    // Clamp absurd literals; Sema reports sizes out of range.
    atom->value = std::strtoll(tok.text.str().c_str(), nullptr, 10);
    if (tok.text.size() > 15)
      atom->value = -1;
    consume();
    return atom;
  }
  if (tok.is(Tok::Ident)) {
    atom->kind = DimExpr::Kind::Name;
    atom->name = tok.text.str();
    consume();
    return atom;
  }
  if (tok.is(Tok::LParen)) {
    consume();
    ++depth;
    std::unique_ptr<DimExpr> inner = parseDimExpr();
    --depth;
    if (!inner || !expect(Tok::RParen, "to close the dimension expression"))
      return nullptr;
    return inner;
  }
  if (!tok.is(Tok::Error))
    diags.error(tok.getRange(), "expected a dimension (an integer or a dim "
                                "name), found " +
                                    tokenName(tok.kind));
  return nullptr;
}

bool Parser::parseType(TypeExpr &type) {
  llvm::SMLoc start = tok.getLoc();
  if (!tok.is(Tok::Ident)) {
    if (!tok.is(Tok::Error))
      diags.error(tok.getRange(), "expected an element type (f16, bf16, f32, "
                                  "f64, c64, c128), found " +
                                      tokenName(tok.kind));
    return false;
  }
  std::optional<DType> dtype = parseDType(tok.text);
  if (!dtype) {
    diags.error(tok.getRange(), "unknown element type '" + tok.text +
                                    "'; expected f16, bf16, f32, f64, c64 "
                                    "or c128");
    return false;
  }
  type.dtype = *dtype;
  consume();
  if (consumeIf(Tok::LBracket)) {
    if (!tok.is(Tok::RBracket)) {
      do {
        std::unique_ptr<DimExpr> dim = parseDimExpr();
        if (!dim)
          return false;
        type.dims.push_back(std::move(dim));
      } while (consumeIf(Tok::Comma));
    }
    if (!expect(Tok::RBracket, "to close the shape"))
      return false;
  }
  type.range = rangeFrom(start);
  return true;
}

bool Parser::parseTensorDecl(LayerDecl &layer, Role role) {
  llvm::SMLoc start = tok.getLoc();
  consume(); // role keyword
  TensorDecl decl;
  decl.role = role;
  if (!tok.is(Tok::Ident))
    return expect(Tok::Ident, ("after '" + roleName(role) + "'").str());
  decl.name = tok.text.str();
  consume();
  if (!expect(Tok::Colon, "before the type") || !parseType(decl.type))
    return false;
  if (consumeIf(Tok::KwInit)) {
    InitRule init;
    if (!tok.is(Tok::Ident))
      return expect(Tok::Ident,
                    "after 'init' (zeros, ones, normal, uniform, ...)");
    init.name = tok.text.str();
    llvm::SMLoc initStart = tok.getLoc();
    consume();
    if (consumeIf(Tok::LParen)) {
      if (!tok.is(Tok::RParen)) {
        do {
          ExprPtr arg = parseExpr();
          if (!arg)
            return false;
          init.args.push_back(std::move(arg));
        } while (consumeIf(Tok::Comma));
      }
      if (!expect(Tok::RParen, "to close the init rule's arguments"))
        return false;
    }
    init.range = rangeFrom(initStart);
    decl.init = std::move(init);
  }
  decl.range = rangeFrom(start);
  layer.tensors.push_back(std::move(decl));
  return true;
}

StmtPtr Parser::parseStmt() {
  llvm::SMLoc start = tok.getLoc();
  auto stmt = std::make_unique<Stmt>();
  if (consumeIf(Tok::KwReturn)) {
    stmt->kind = Stmt::Kind::Return;
    do {
      ExprPtr value = parseExpr();
      if (!value)
        return nullptr;
      stmt->values.push_back(std::move(value));
    } while (consumeIf(Tok::Comma));
    stmt->range = rangeFrom(start);
    return stmt;
  }
  if (consumeIf(Tok::KwNext)) {
    stmt->kind = Stmt::Kind::Next;
    if (!tok.is(Tok::Ident)) {
      expect(Tok::Ident, "after 'next' (the state to update)");
      return nullptr;
    }
    stmt->targets.emplace_back(tok.text.str(), tok.getRange());
    consume();
  } else {
    stmt->kind = Stmt::Kind::Assign;
    if (!tok.is(Tok::Ident)) {
      if (!tok.is(Tok::Error))
        diags.error(tok.getRange(), "expected a statement (a declaration, "
                                    "'name = expr', 'next state = expr' or "
                                    "'return'), found " +
                                        tokenName(tok.kind));
      return nullptr;
    }
    do {
      if (!tok.is(Tok::Ident)) {
        expect(Tok::Ident, "in the list of names to assign");
        return nullptr;
      }
      stmt->targets.emplace_back(tok.text.str(), tok.getRange());
      consume();
    } while (consumeIf(Tok::Comma));
  }
  if (!expect(Tok::Equal, stmt->kind == Stmt::Kind::Next
                              ? "after the state name"
                              : "after the names to assign"))
    return nullptr;
  ExprPtr value = parseExpr();
  if (!value)
    return nullptr;
  stmt->values.push_back(std::move(value));
  stmt->range = rangeFrom(start);
  return stmt;
}

ExprPtr Parser::parseExpr() {
  if (depth > kMaxDepth) {
    diags.error(tok.getRange(), "expression nested too deeply");
    return nullptr;
  }
  ++depth;
  ExprPtr e = parseAdditive();
  --depth;
  return e;
}

ExprPtr Parser::parseAdditive() {
  llvm::SMLoc start = tok.getLoc();
  ExprPtr lhs = parseMultiplicative();
  // Each operator nests the (left-deep) tree one level further, and the
  // checker recurses as deep as the tree: a long chain counts like
  // parentheses.
  DepthGuard guard(depth);
  while (lhs && (tok.is(Tok::Plus) || tok.is(Tok::Minus))) {
    if (++depth > kMaxDepth) {
      diags.error(tok.getRange(), "expression nested too deeply");
      return nullptr;
    }
    char op = tok.text[0];
    llvm::SMRange opRange = tok.getRange();
    consume();
    ExprPtr rhs = parseMultiplicative();
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BinaryExpr>(rangeFrom(start), opRange, op,
                                       std::move(lhs), std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseMultiplicative() {
  llvm::SMLoc start = tok.getLoc();
  ExprPtr lhs = parseUnary();
  DepthGuard guard(depth);
  while (lhs && (tok.is(Tok::Star) || tok.is(Tok::Slash) || tok.is(Tok::At))) {
    if (++depth > kMaxDepth) {
      diags.error(tok.getRange(), "expression nested too deeply");
      return nullptr;
    }
    char op = tok.text[0];
    llvm::SMRange opRange = tok.getRange();
    consume();
    ExprPtr rhs = parseUnary();
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BinaryExpr>(rangeFrom(start), opRange, op,
                                       std::move(lhs), std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseUnary() {
  if (tok.is(Tok::Minus)) {
    llvm::SMLoc start = tok.getLoc();
    consume();
    if (depth > kMaxDepth) {
      diags.error(tok.getRange(), "expression nested too deeply");
      return nullptr;
    }
    ++depth;
    ExprPtr operand = parseUnary();
    --depth;
    if (!operand)
      return nullptr;
    return std::make_unique<UnaryExpr>(rangeFrom(start), '-',
                                       std::move(operand));
  }
  return parsePrimary();
}

ExprPtr Parser::parsePrimary() {
  Token t = tok;
  switch (t.kind) {
  case Tok::Int:
  case Tok::Float: {
    consume();
    double value = std::strtod(t.text.str().c_str(), nullptr);
    return std::make_unique<NumberExpr>(t.getRange(), value,
                                        t.is(Tok::Int));
  }
  case Tok::String:
    consume();
    return std::make_unique<StringExpr>(t.getRange(),
                                        t.text.drop_front().drop_back().str());
  case Tok::Ident:
    consume();
    if (tok.is(Tok::LParen))
      return parseCall(t);
    return std::make_unique<NameExpr>(t.getRange(), t.text.str());
  case Tok::LParen: {
    consume();
    std::vector<ExprPtr> elements;
    do {
      ExprPtr e = parseExpr();
      if (!e)
        return nullptr;
      elements.push_back(std::move(e));
    } while (consumeIf(Tok::Comma));
    if (!expect(Tok::RParen, "to close the parenthesized expression"))
      return nullptr;
    if (elements.size() == 1)
      return std::move(elements.front());
    auto tuple = std::make_unique<TupleExpr>(rangeFrom(t.getLoc()));
    tuple->elements = std::move(elements);
    return tuple;
  }
  case Tok::Error:
    consume();
    return nullptr;
  default:
    diags.error(t.getRange(),
                "expected an expression, found " + tokenName(t.kind));
    return nullptr;
  }
}

ExprPtr Parser::parseCall(Token name) {
  consume(); // '('
  // A call nests one level; `f(g(h(...)))` reaches here without parseExpr.
  DepthGuard guard(depth);
  if (++depth > kMaxDepth) {
    diags.error(name.getRange(), "expression nested too deeply");
    return nullptr;
  }
  auto call = std::make_unique<CallExpr>(name.getRange(), name.text.str(),
                                         name.getRange());
  if (!tok.is(Tok::RParen)) {
    do {
      // Keywords such as `init` may name keyword arguments (`init=h`).
      bool isKeyword = tok.kind >= Tok::KwLayer;
      if (isKeyword) {
        Token ident = tok;
        consume();
        if (!tok.is(Tok::Equal)) {
          diags.error(ident.getRange(), "'" + ident.text +
                                            "' is a keyword; it can only "
                                            "name an argument ('" +
                                            ident.text + "=...')");
          return nullptr;
        }
        consume();
        ExprPtr value = parseExpr();
        if (!value)
          return nullptr;
        if (call->getKeyword(ident.text)) {
          diags.error(ident.getRange(),
                      "keyword argument '" + ident.text + "' given twice");
          return nullptr;
        }
        call->kwargs.push_back(
            {ident.text.str(), ident.getRange(), std::move(value)});
        continue;
      }
      if (tok.is(Tok::Ident)) {
        // `name=value` is a keyword argument; anything else positional.
        Token ident = tok;
        consume();
        if (consumeIf(Tok::Equal)) {
          ExprPtr value = parseExpr();
          if (!value)
            return nullptr;
          if (call->getKeyword(ident.text)) {
            diags.error(ident.getRange(), "keyword argument '" + ident.text +
                                              "' given twice");
            return nullptr;
          }
          call->kwargs.push_back(
              {ident.text.str(), ident.getRange(), std::move(value)});
          continue;
        }
        // Not a keyword: re-parse the identifier as the start of an
        // expression.
        ExprPtr first = ident.is(Tok::Ident) && tok.is(Tok::LParen)
                            ? parseCall(ident)
                            : std::make_unique<NameExpr>(ident.getRange(),
                                                         ident.text.str());
        if (!first)
          return nullptr;
        // Continue any binary expression the identifier began.
        llvm::SMLoc start = ident.getLoc();
        DepthGuard chain(depth);
        while (tok.is(Tok::Star) || tok.is(Tok::Slash) || tok.is(Tok::At)) {
          if (++depth > kMaxDepth) {
            diags.error(tok.getRange(), "expression nested too deeply");
            return nullptr;
          }
          char op = tok.text[0];
          llvm::SMRange opRange = tok.getRange();
          consume();
          ExprPtr rhs = parseUnary();
          if (!rhs)
            return nullptr;
          first = std::make_unique<BinaryExpr>(rangeFrom(start), opRange, op,
                                               std::move(first),
                                               std::move(rhs));
        }
        while (tok.is(Tok::Plus) || tok.is(Tok::Minus)) {
          if (++depth > kMaxDepth) {
            diags.error(tok.getRange(), "expression nested too deeply");
            return nullptr;
          }
          char op = tok.text[0];
          llvm::SMRange opRange = tok.getRange();
          consume();
          ExprPtr rhs = parseMultiplicative();
          if (!rhs)
            return nullptr;
          first = std::make_unique<BinaryExpr>(rangeFrom(start), opRange, op,
                                               std::move(first),
                                               std::move(rhs));
        }
        if (!call->kwargs.empty()) {
          diags.error(first->getRange(), "positional argument after keyword "
                                         "arguments");
          return nullptr;
        }
        call->args.push_back(std::move(first));
        continue;
      }
      ExprPtr arg = parseExpr();
      if (!arg)
        return nullptr;
      if (!call->kwargs.empty()) {
        diags.error(arg->getRange(), "positional argument after keyword "
                                     "arguments");
        return nullptr;
      }
      call->args.push_back(std::move(arg));
    } while (consumeIf(Tok::Comma));
  }
  if (!expect(Tok::RParen, ("to close the call to '" + name.text + "'").str()))
    return nullptr;
  if (consumeIf(Tok::KwDo)) {
    call->body = parseBody();
    if (!call->body)
      return nullptr;
  }
  llvm::SMRange range = rangeFrom(name.getLoc());
  auto result = std::make_unique<CallExpr>(range, call->callee,
                                           call->calleeRange);
  result->args = std::move(call->args);
  result->kwargs = std::move(call->kwargs);
  result->body = std::move(call->body);
  return result;
}

std::unique_ptr<Body> Parser::parseBody() {
  llvm::SMLoc start = tok.getLoc();
  auto body = std::make_unique<Body>();
  if (!expect(Tok::LParen, "to open the parameter list"))
    return nullptr;
  if (!tok.is(Tok::RParen)) {
    do {
      if (!tok.is(Tok::Ident)) {
        expect(Tok::Ident, "in the parameter list");
        return nullptr;
      }
      body->params.emplace_back(tok.text.str(), tok.getRange());
      consume();
    } while (consumeIf(Tok::Comma));
  }
  if (!expect(Tok::RParen, "to close the parameter list"))
    return nullptr;
  // Counted like parseCall's level, so that a body in a call in a body ...
  // reaches this check first; checked before the '{' so that recovery
  // skips the whole body.
  DepthGuard guard(depth);
  if (++depth > kMaxDepth) {
    diags.error(tok.getRange(), "bodies nested too deeply");
    return nullptr;
  }
  if (!expect(Tok::LBrace, "to open the body"))
    return nullptr;
  bool ok = parseBodyStmts(body->stmts, nullptr);
  if (!ok)
    return nullptr;
  body->range = rangeFrom(start);
  return body;
}
