//===- RecurPCH.cpp - the translation unit RecurPCH's header is built for -===//
//
// Empty: CMake needs one source to build RecurPCH's precompiled header
// (cmake/RecurPCH.cmake).
//
//===----------------------------------------------------------------------===//
