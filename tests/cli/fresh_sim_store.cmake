# cmake -DGPUSCALER=BIN -DDB=FILE -DSEED=N -P fresh_sim_store.cmake: writes
# FILE afresh with `gpuscaler sim --scenario demo --days 1 --seed N --db FILE`
# (the setup tests of the cli_fleet_stores fixture, tests/cli/CMakeLists.txt).
# An old FILE goes first: sim refuses to write the same run into a store
# twice, and a store left from another run must not pass for this one's.
foreach(suffix "" "-wal" "-shm" "-journal")
  file(REMOVE "${DB}${suffix}")
endforeach()
get_filename_component(dir "${DB}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
execute_process(COMMAND "${GPUSCALER}" sim --scenario demo --days 1 --seed "${SEED}" --db "${DB}"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpuscaler sim --seed ${SEED} --db ${DB} exited ${rc}:\n${err}")
endif()
