// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/audit/toolchain_names.h"

namespace linkd::audit {

// Names of the C runtime's and the linker's own state, which every module
// has a copy of by design (seen only when a symbol table lists them).
bool isToolchainName(std::string_view n) {
  static constexpr std::string_view kExact[] = {"__dso_handle",
                                                "__TMC_END__",
                                                "__stack_chk_guard",
                                                "_IO_stdin_used",
                                                "__data_start",
                                                "data_start",
                                                "__bss_start",
                                                "_edata",
                                                "_end",
                                                "_dowildcard",
                                                "_newmode",
                                                "_fmode",
                                                "_commode",
                                                "__security_cookie",
                                                "__security_cookie_complement",
                                                "__ImageBase",
                                                "__globallocalestatus",
                                                "_charmax",
                                                "__proc_attached",
                                                "atexit_table",
                                                "__onexitbegin",
                                                "__onexitend",
                                                "_tls_index",
                                                "_tls_used",
                                                "mingw_app_type",
                                                "__imp___initenv",
                                                "initialized",
                                                "__CTOR_LIST__",
                                                "__DTOR_LIST__",
                                                "__dyn_tls_init_callback",
                                                "_CRT_MT",
                                                "__xl_a",
                                                "__xl_z",
                                                "__xl_c",
                                                "__xl_d",
                                                "_MINGW_INSTALL_DEBUG_MATHERR",
                                                "__mingw_module_is_dll",
                                                "__native_startup_state",
                                                "__native_startup_lock",
                                                "__native_dllmain_reason",
                                                "__native_vcclrit_reason",
                                                "__dll__",
                                                "managedapp",
                                                "mainret",
                                                "has_cctor",
                                                "__mingw_app_type",
                                                "__mingw_initltsdrot_force",
                                                "__mingw_initltsdyn_force",
                                                "__mingw_initltssuo_force",
                                                "_gnu_exception_handler",
                                                "__mingw_winmain_hInstance",
                                                "_tls_start",
                                                "_tls_end",
                                                "key_dtor_list",
                                                "maxSections",
                                                "the_secs",
                                                "__cpu_features_init",
                                                "__mingw_oldexcpt_handler"};
  for (std::string_view e : kExact)
    if (n == e)
      return true;
  for (std::string_view p :
       {"completed.", "__mingw", "_CRT_", "__native_", "__xi_", "__xc_",
        "__xp_", "__xt_", "__tls_", "__dyn_tls", "__imp_", ".refptr.",
        "__RUNTIME_PSEUDO", "__rt_psrelocs", "__bss_", "__data_", "was_init.",
        "__iob", "__lconv", "_head_lib", "__libc_csu", "object.", "dtor_idx.",
        // GNU ld's PE images: TLS and CRT section
        // bounds, image layout symbols.
        "___tls_", "___crt_", "__end__", "__image_base__", "__major_",
        "__minor_", "__size_of_", "__subsystem__", "__dll_characteristics__",
        "__file_alignment__", "__section_alignment__", "__loader_flags__",
        "_head_", "__tls_used", "_tls_"})
    if (n.starts_with(p))
      return true;
  // GCC's numbered function-local statics of the CRT (crtstuff's `p.0`,
  // `completed.1`): C runtime code, in every module.
  for (std::string_view p : {"p.", "completed.", "dtor_idx.", "__EH_FRAME_"})
    if (n.starts_with(p) && n.size() > p.size() &&
        n.find_first_not_of("0123456789", p.size()) == std::string_view::npos)
      return true;
  return false;
}

// Functions of the C runtime's startup files every module has (crti.o's
// _init, crtstuff's helpers): never a runtime's accessor.
bool isToolchainFunction(std::string_view n) {
  for (std::string_view e :
       {"_init", "_fini", "_start", "main", "deregister_tm_clones",
        "register_tm_clones", "__do_global_dtors_aux", "frame_dummy",
        "_dl_relocate_static_pie", "__libc_csu_init", "__libc_csu_fini"})
    if (n == e)
      return true;
  return n.starts_with("__x86.get_pc_thunk.");
}

// Source files of the MinGW/GCC C runtime, whose file-local state a PE or
// ELF symbol table lists for every module.
bool isToolchainFile(std::string_view stem) {
  static constexpr std::string_view kStems[] = {"crtexe",
                                                "crtdll",
                                                "tlssup",
                                                "tlsthrd",
                                                "pseudo-reloc",
                                                "cinitexe",
                                                "gccmain",
                                                "natstart",
                                                "wildcard",
                                                "dllentry",
                                                "atonexit",
                                                "mingw_helpers",
                                                "merr",
                                                "xtxtmode",
                                                "charmax",
                                                "dllargv",
                                                "gs_support",
                                                "tlsmcrt",
                                                "pesect",
                                                "_newmode",
                                                "xncommod",
                                                "cpu_features",
                                                "crtstuff",
                                                "crtbegin",
                                                "crtend",
                                                "cxa_atexit",
                                                "mingw_custom",
                                                "usermatherr",
                                                "mingw_matherr",
                                                "ucrtbase_compat",
                                                "txtmode",
                                                "CRT_fp10",
                                                "CRT_glob",
                                                "dll_dependency",
                                                "onexit_table",
                                                "mingw_pformat",
                                                "crt_handler",
                                                "acrt_iob_func",
                                                "init",
                                                "emutls",
                                                "lib64_libmingw32_a-crtexe"};
  for (std::string_view s : kStems)
    if (stem == s)
      return true;
  return false;
}

bool isNotStateSection(std::string_view s) {
  return s.starts_with(".data.rel.ro") || s.starts_with(".got") ||
         s == ".dynamic" || s.starts_with(".init_array") ||
         s.starts_with(".fini_array") || s.starts_with(".preinit_array") ||
         s == ".tm_clone_table" || s == ".jcr" || s.starts_with(".ctors") ||
         s.starts_with(".dtors") || s == ".idata" || s.starts_with(".CRT");
}

} // namespace linkd::audit
