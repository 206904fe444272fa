"""The PyFlink example job: numbers 1..100 from datagen, a Python UDF that names their parity
(it runs in a Python worker beside the TaskManager), counted and summed per parity into a print
sink. Bounded, in batch mode: the job reaches FINISHED and the TaskManager's stdout (kubectl
logs) shows python-example> +I[even, 50, 2550] and python-example> +I[odd, 50, 2500]."""

from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.udf import udf


@udf(result_type=DataTypes.STRING())
def parity(n):
    return "even" if n % 2 == 0 else "odd"


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.create_temporary_function("parity", parity)
    t_env.execute_sql("""
        CREATE TABLE numbers (n BIGINT) WITH (
          'connector' = 'datagen',
          'number-of-rows' = '100',
          'fields.n.kind' = 'sequence',
          'fields.n.start' = '1',
          'fields.n.end' = '100'
        )""")
    t_env.execute_sql("""
        CREATE TABLE parities (parity STRING, numbers BIGINT, total BIGINT) WITH (
          'connector' = 'print',
          'print-identifier' = 'python-example'
        )""")
    t_env.execute_sql("""
        INSERT INTO parities
        SELECT parity(n), COUNT(*), SUM(n) FROM numbers GROUP BY parity(n)""")


if __name__ == "__main__":
    main()
