/*
 * The one C source of every stand-in ELF file of tests.standin. gcc compiles it once per set of
 * -D options below; each file is then linked by ld with its own data blob (the "identity": its
 * distribution, version and install path, plus padding so builds differ in size like real ones)
 * and its own exported alias of standin_identity(), cuda_venv_standin_identity_<path>.
 *   STANDIN_CUDNN_VERSION                     size_t cudnnGetVersion(void)
 *   STANDIN_NCCL_VERSION                      int ncclGetVersion(int *)
 *   STANDIN_CUDART_VERSION                    int cudaRuntimeGetVersion(int *)
 *   STANDIN_PYMODULE / STANDIN_PYMODULE_NAME  a stable-ABI Python extension module
 *   STANDIN_EXECUTABLE                        a program whose entry point exits 0
 * Nothing here calls another library: loading a stand-in never runs foreign code.
 */
#include <stddef.h>

#define STANDIN_CAT2(a, b) a##b
#define STANDIN_CAT(a, b) STANDIN_CAT2(a, b)

/* ld --format=binary names the blob after its file, "identity"; hidden so no other library's
 * blob can interpose. */
extern const char _binary_identity_start[] __attribute__((visibility("hidden")));

const char *standin_identity(void)
{
    return _binary_identity_start;
}

#ifdef STANDIN_CUDNN_VERSION
size_t cudnnGetVersion(void)
{
    return (size_t)STANDIN_CUDNN_VERSION;
}
#endif

#ifdef STANDIN_NCCL_VERSION
int ncclGetVersion(int *version)
{
    if (version == NULL)
        return 4; /* ncclInvalidArgument */
    *version = STANDIN_NCCL_VERSION;
    return 0;
}
#endif

#ifdef STANDIN_CUDART_VERSION
int cudaRuntimeGetVersion(int *version)
{
    if (version == NULL)
        return 1; /* cudaErrorInvalidValue */
    *version = STANDIN_CUDART_VERSION;
    return 0;
}
#endif

#ifdef STANDIN_PYMODULE
#include <Python.h>

static struct PyModuleDef standin_module = {
    PyModuleDef_HEAD_INIT, STANDIN_PYMODULE_NAME, "Stand-in extension module built by tests.standin.", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC STANDIN_CAT(PyInit_, STANDIN_PYMODULE)(void)
{
    PyObject *module = PyModule_Create(&standin_module);
    if (module != NULL && PyModule_AddStringConstant(module, "_standin_identity", standin_identity()) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
#endif

#ifdef STANDIN_EXECUTABLE
__attribute__((noreturn)) void _start(void)
{
    __asm__ volatile("mov $60, %eax\n\txor %edi, %edi\n\tsyscall");
    __builtin_unreachable();
}
#endif
