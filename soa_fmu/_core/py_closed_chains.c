/* soa_fmu._core entry points of the closed_chains family. */
#include "pycore.h"

PyMethodDef soa_py_closed_chains_methods[] = {
    {NULL, NULL, 0, NULL}};
