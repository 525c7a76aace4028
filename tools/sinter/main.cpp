#include <cstdio>
int main() { std::puts("sinter"); return 0; }
